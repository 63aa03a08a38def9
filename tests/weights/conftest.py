from tests.hubserver import hub_server

__all__ = ["hub_server"]
