"""Every field of every inventory model clusterforge.model exports says what it means: the inventory reference is to be
generated from these descriptions, and a field without one would leave a hole in it."""

from __future__ import annotations

import inspect

from pydantic import BaseModel

from clusterforge import model


def exported_models() -> list[type[BaseModel]]:
    exported = (getattr(model, name) for name in model.__all__)
    return [obj for obj in exported if inspect.isclass(obj) and issubclass(obj, BaseModel)]


def test_the_package_exports_models():
    assert len(exported_models()) > 20


def test_every_field_of_every_exported_model_has_a_description():
    missing = [f"{cls.__name__}.{name}" for cls in exported_models() for name, info in cls.model_fields.items()
               if not (info.description or "").strip()]
    assert not missing, f"fields without a description: {', '.join(missing)}"
