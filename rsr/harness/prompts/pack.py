"""Prompt packs: every word the Terminus 2 loop puts in front of the model, selectable.

A pack maps each key of `KEYS` to a `str.format` template (`{name}` placeholders, `{{`/`}}`
for literal braces, the convention of Harbor's own template files, so a directory pack can be
made from them unchanged). Three sources:

- `rsr` (default): our own wording, package data under `packs/rsr/`, versioned by `RSR_PACK`;
- `harbor`: Harbor's Terminus 2 wording, read at run time from an installed Harbor
  (`rsr.harness.prompts.harbor`); the repository holds none of it;
- a directory: the same layout as `packs/rsr/` (long templates as `<key>.txt`, the short
  messages in `messages.toml`); a key it lacks is an error naming the file.

`PromptPack.sha256` covers every key and text, so a log or a training row pins the words
(the keys, the record and its check live in `rsr.harness.prompts.packtypes`).
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib.resources import files
from pathlib import Path

from rsr.harness.prompts.packtypes import (
    FILE_KEYS,
    KEYS,
    MESSAGE_KEYS,
    PromptPack,
    PromptPackError,
    check_pack,
)

__all__ = ["FILE_KEYS", "KEYS", "MESSAGE_KEYS", "RSR_PACK", "PromptPack", "PromptPackError",
           "check_pack", "prompt_pack"]

RSR_PACK = "rsr-v3"

def _read_dir(root: Path, where: str) -> dict[str, str]:
    texts: dict[str, str] = {}
    for key in FILE_KEYS:
        path = root / f"{key}.txt"
        if not path.is_file():
            raise PromptPackError(f"prompt pack {where}: {path} is missing")
        texts[key] = path.read_text(encoding="utf-8")
    messages = root / "messages.toml"
    if not messages.is_file():
        raise PromptPackError(f"prompt pack {where}: {messages} is missing")
    try:
        table = tomllib.loads(messages.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise PromptPackError(f"{messages}: {e}") from e
    for key, value in table.items():
        if key in FILE_KEYS:
            raise PromptPackError(f"{messages}: {key} belongs in {key}.txt")
        if key not in MESSAGE_KEYS:
            raise PromptPackError(f"{messages}: unknown key {key}")
        if not isinstance(value, str):
            raise PromptPackError(f"{messages}: {key} must be a string")
        texts[key] = value
    return texts


def _rsr_pack() -> PromptPack:
    root = files(__package__).joinpath("packs", "rsr")
    texts = _read_dir(Path(str(root)), "rsr")
    check_pack(texts, "rsr")
    return PromptPack(name="rsr", texts=texts, source=f"rsr package data ({RSR_PACK})",
                      version=RSR_PACK)


@cache
def prompt_pack(name: str = "rsr") -> PromptPack:
    """The pack `rsr`, `harbor`, or the directory `name`; errors name the file and key."""
    if name == "rsr":
        return _rsr_pack()
    if name == "harbor":
        from rsr.harness.prompts.harbor import harbor_pack

        return harbor_pack()
    root = Path(name).expanduser()
    if not root.is_dir():
        raise PromptPackError(f"prompts={name}: not `rsr`, `harbor` or a directory")
    texts = _read_dir(root, str(root))
    check_pack(texts, str(root))
    return PromptPack(name=str(root.resolve()), texts=texts, source=str(root.resolve()),
                      version="dir")
