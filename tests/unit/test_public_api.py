"""The public surface: ``reverie.__all__`` is exact and the error hierarchy is what callers catch."""

from __future__ import annotations

import importlib
import inspect

import pytest

import reverie


def test_all_has_no_duplicates() -> None:
    assert len(reverie.__all__) == len(set(reverie.__all__))


@pytest.mark.parametrize("name", reverie.__all__)
def test_every_name_in_all_is_importable(name: str) -> None:
    module = importlib.import_module("reverie")
    assert hasattr(module, name)
    namespace: dict[str, object] = {}
    exec(f"from reverie import {name}", namespace)
    assert namespace[name] is getattr(reverie, name)


def _defined_in_reverie(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "reverie" or module.startswith("reverie.")


def test_every_public_class_and_function_is_in_all() -> None:
    public = {
        name
        for name, obj in vars(reverie).items()
        if not name.startswith("_")
        and not inspect.ismodule(obj)
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and _defined_in_reverie(obj)
    }
    assert public, "found no public classes or functions at all"
    assert public - set(reverie.__all__) == set()


def test_all_names_only_public_objects() -> None:
    for name in reverie.__all__:
        obj = getattr(reverie, name)
        assert not inspect.ismodule(obj), name
        if name != "__version__":
            assert not name.startswith("_"), name
            assert _defined_in_reverie(obj), name


def test_star_import_exports_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from reverie import *", namespace)
    exported = {k for k in namespace if k != "__builtins__"}
    assert exported == set(reverie.__all__)


@pytest.mark.parametrize(
    "name",
    ["open", "Reverie", "Scope", "Tier", "MemoryEntry", "FakeClock", "Settings", "ValidationError", "NotFound"],
)
def test_core_names_are_exported(name: str) -> None:
    assert name in reverie.__all__


def test_version_is_a_string() -> None:
    assert isinstance(reverie.__version__, str)
    assert reverie.__version__.count(".") >= 1


def test_open_is_callable() -> None:
    assert callable(reverie.open)
    assert inspect.isfunction(reverie.open)
    assert "target" in inspect.signature(reverie.open).parameters


def test_open_is_not_the_builtin() -> None:
    import builtins

    assert reverie.open is not builtins.open


@pytest.mark.parametrize(
    "error",
    [
        reverie.ValidationError,
        reverie.NotFound,
        reverie.Conflict,
        reverie.StorageError,
        reverie.StoreBusy,
        reverie.StorageFull,
        reverie.StoreUnavailable,
        reverie.ConfigError,
        reverie.LLMError,
    ],
)
def test_errors_subclass_reverie_error(error: type[Exception]) -> None:
    assert issubclass(error, reverie.ReverieError)
    assert issubclass(reverie.ReverieError, Exception)


def test_every_exported_exception_is_a_reverie_error() -> None:
    exported = [getattr(reverie, n) for n in reverie.__all__]
    errors = [o for o in exported if inspect.isclass(o) and issubclass(o, BaseException)]
    assert len(errors) == 13
    assert all(issubclass(e, reverie.ReverieError) for e in errors)


def test_validation_error_is_a_value_error_with_field() -> None:
    assert issubclass(reverie.ValidationError, ValueError)
    err = reverie.ValidationError("bad", field="content")
    assert err.field == "content"
    assert str(err) == "bad"
    assert reverie.ValidationError("bad").field is None
    with pytest.raises(ValueError):
        raise reverie.ValidationError("caught as ValueError")


def test_not_found_is_a_lookup_error() -> None:
    assert issubclass(reverie.NotFound, LookupError)
    with pytest.raises(LookupError):
        raise reverie.NotFound("missing")


def test_store_busy_is_a_storage_error() -> None:
    assert issubclass(reverie.StoreBusy, reverie.StorageError)


def test_other_errors_are_not_value_or_lookup_errors() -> None:
    for error in (reverie.Conflict, reverie.StorageError, reverie.ConfigError, reverie.ReverieError):
        assert not issubclass(error, ValueError | LookupError), error
