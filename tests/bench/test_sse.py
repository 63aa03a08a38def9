from __future__ import annotations

import json

from servekit.bench.client import stream_problem, usage_problem
from servekit.bench.sse import StreamState


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _chat(delta: dict[str, str], finish: str | None = None) -> bytes:
    return _event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def test_role_only_chunk_is_an_event_but_not_content() -> None:
    state = StreamState(chat=True)
    state.feed(_chat({"role": "assistant", "content": ""}), 1.0)
    assert state.t_first_event == 1.0 and state.t_first_content is None
    state.feed(_chat({"content": "Hi"}), 2.5)
    assert state.t_first_content == 2.5 and state.t_content == [2.5]


def test_events_split_across_reads_and_crlf_lines() -> None:
    state = StreamState(chat=False)
    raw = (_event({"choices": [{"text": "a"}]}) + _event({"choices": [{"text": "b"}]})).replace(
        b"\n", b"\r\n"
    )
    state.feed(raw[:10], 1.0)
    assert state.t_content == []
    state.feed(raw[10:40], 2.0)
    state.feed(raw[40:], 3.0)
    state.feed(b": keep-alive comment\n\ndata: [DONE]\n\n", 4.0)
    assert state.pieces == ["a", "b"] and state.t_content == [2.0, 3.0]
    assert state.done and state.error is None


def test_malformed_line_and_bad_json_are_errors() -> None:
    bad_line = StreamState(chat=False)
    bad_line.feed(b"this is not sse\n", 1.0)
    assert bad_line.error is not None and "malformed event line" in bad_line.error
    bad_json = StreamState(chat=False)
    bad_json.feed(b"data: {not json\n\n", 1.0)
    assert bad_json.error is not None and "malformed event data" in bad_json.error


def test_error_event_mid_stream() -> None:
    state = StreamState(chat=False)
    state.feed(_event({"choices": [{"text": "a"}]}) + _event({"error": {"message": "boom"}}), 1.0)
    assert state.error == "server error mid-stream: boom"


def test_truncated_event_at_end_of_body() -> None:
    state = StreamState(chat=False)
    state.feed(b'data: {"choices": [{"text": "a"', 1.0)
    state.close()
    assert state.error is not None and "ended inside an event" in state.error


def test_stream_problems() -> None:
    empty = StreamState(chat=False)
    empty.feed(b"data: [DONE]\n\n", 1.0)
    assert stream_problem(empty) == "the response carried no content"
    unfinished = StreamState(chat=False)
    unfinished.feed(_event({"choices": [{"text": "a"}]}), 1.0)
    assert "without a finish_reason" in str(stream_problem(unfinished))
    assert usage_problem({"prompt_tokens": 3, "completion_tokens": 1}, 2) is not None
    assert usage_problem({"prompt_tokens": 3, "completion_tokens": "x"}, 1) is not None
    assert usage_problem({"prompt_tokens": 3, "completion_tokens": 4}, 2) is None
    assert usage_problem(None, 2) is None


def test_json_only_pythons_parser_accepts_still_parses() -> None:
    """NaN and integers beyond 64 bits: refused by the fast parser, read by json."""
    state = StreamState(chat=False)
    event = b'data: {"choices":[{"text":"a","logprobs":{"top":NaN}}],"n":123456789012345678901}\n\n'
    state.feed(event, 1.0)
    assert state.error is None and state.pieces == ["a"] and state.t_content == [1.0]


def test_named_events_ids_and_retry_fields_are_not_errors() -> None:
    """vLLM sends only data lines, but a proxy may add SSE fields; they carry no content."""
    state = StreamState(chat=False)
    state.feed(b"event: completion\nid: 7\nretry: 1000\n" + _event({"choices": [{"text": "a"}]}), 1)
    state.feed(b"event: end", 2.0)  # a last field line without its newline
    state.close()
    assert state.error is None and state.pieces == ["a"]


def test_a_partial_malformed_line_at_end_of_body_is_an_error() -> None:
    state = StreamState(chat=False)
    state.feed(_event({"choices": [{"text": "a"}]}) + b"garbage", 1.0)
    state.close()
    assert state.error == "malformed event line: b'garbage'"


def test_event_data_must_be_a_json_object() -> None:
    state = StreamState(chat=False)
    state.feed(b"data: [1, 2]\n\n", 1.0)
    assert state.error == "event data is not a JSON object: b'[1, 2]'"


def test_an_error_event_with_a_plain_string_is_reported_as_is() -> None:
    state = StreamState(chat=False)
    state.feed(_event({"error": "engine overloaded"}), 1.0)
    assert state.error == "server error mid-stream: engine overloaded"


def test_a_choice_that_is_not_an_object_carries_no_content() -> None:
    state = StreamState(chat=True)
    state.feed(_event({"choices": ["oops"]}) + _chat({"content": "Hi"}), 1.0)
    assert state.error is None and state.pieces == ["Hi"] and state.t_first_event == 1.0


def test_an_empty_data_line_is_malformed_data() -> None:
    state = StreamState(chat=False)
    state.feed(b"data:\n\n", 1.0)
    assert state.error == "malformed event data: b''"
