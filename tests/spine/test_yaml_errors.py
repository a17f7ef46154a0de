"""Errors of rsr's YAML formats, as a user with a typo meets them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from rsr.errors import FileFormatError
from rsr.yaml_model import load_yaml_model


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    output_dir: str
    factory: str


def test_misspelt_key_is_named_before_the_required_field_it_leaves_missing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("output_dir: out\nfactroy: f.yaml\n")
    with pytest.raises(FileFormatError, match=r"c\.yaml: factroy: Extra inputs .*\(and 1 more problem"):
        load_yaml_model(path, Config)
