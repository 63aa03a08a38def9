"""The revocation feed: a publisher's signed, expiring, monotonically numbered retractions.

``feed.yaml`` -> :func:`sign_feed_file` -> ``feed.json``; buyers check a kit or a model
against it with :func:`check_kit_feed` / :func:`check_weights_feed`. docs/feed.md has the
format and the threat model.
"""

from servekit.feed.check import (
    FeedCheck,
    check_kit_feed,
    check_package,
    check_weights_feed,
    verify_feed,
)
from servekit.feed.models import Feed, FeedSource, Retraction
from servekit.feed.sign import build_feed, sign_feed_file
from servekit.feed.state import default_state_path

__all__ = [
    "Feed",
    "FeedCheck",
    "FeedSource",
    "Retraction",
    "build_feed",
    "check_kit_feed",
    "check_package",
    "check_weights_feed",
    "default_state_path",
    "sign_feed_file",
    "verify_feed",
]
