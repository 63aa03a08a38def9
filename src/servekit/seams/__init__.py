"""Where foreign libraries meet servekit: their exceptions become servekit errors here.

One module per concern, so a message reads the same wherever it is raised:

* :mod:`~servekit.seams.problems`: a pydantic ``ValidationError`` as sentences that name
  the option or field (``--output-tokens must be at least 1 (got 0)``);
* :mod:`~servekit.seams.translate`: blocks whose ``ValidationError`` (:func:`validating`)
  or parser exceptions (:func:`parsing`) become the caller's error;
* :mod:`~servekit.seams.files`: every file read (and text write), ``OSError`` and
  ``UnicodeDecodeError`` turned into the caller's error, naming the file;
* :mod:`~servekit.seams.yamltext`: YAML parsed safely, errors naming the line;
* :mod:`~servekit.seams.urls`: an endpoint URL checked before anything connects to it;
* :mod:`~servekit.seams.outputs`: the overwrite rule for what a command writes;
* :mod:`~servekit.seams.jsonvalues`: values made fit for strict JSON.

``tests/test_seams_guard.py`` keeps the habit: no ``except FileNotFoundError`` or
``except ValidationError`` outside this package but for a short, commented allow-list.
"""

from servekit.seams.files import (
    ErrorFactory,
    ReadFailed,
    ReadFailure,
    read_bytes,
    read_head,
    read_optional,
    read_text,
    read_utf8,
    reading,
    write_text,
)
from servekit.seams.jsonvalues import strict_json
from servekit.seams.outputs import output_dir, output_file
from servekit.seams.problems import (
    FieldProblem,
    field_problems,
    option_names,
    problem_text,
    validation_problems,
)
from servekit.seams.translate import parsing, validating
from servekit.seams.urls import parse_url
from servekit.seams.yamltext import MAX_YAML_DEPTH, YamlErrorFactory, parse_yaml

__all__ = [
    "MAX_YAML_DEPTH",
    "ErrorFactory",
    "FieldProblem",
    "ReadFailed",
    "ReadFailure",
    "YamlErrorFactory",
    "field_problems",
    "option_names",
    "output_dir",
    "output_file",
    "parse_url",
    "parse_yaml",
    "parsing",
    "problem_text",
    "read_bytes",
    "read_head",
    "read_optional",
    "read_text",
    "read_utf8",
    "reading",
    "strict_json",
    "validating",
    "validation_problems",
    "write_text",
]
