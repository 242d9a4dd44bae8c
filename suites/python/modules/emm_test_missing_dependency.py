"""Found, but imports a module that does not exist: an import that raises, not a missing module."""
import emm_test_no_such_dependency  # noqa: F401
