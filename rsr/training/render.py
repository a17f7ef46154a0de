"""The one renderer from chat messages to model text, shared by training and inference.

Training rows, the harness's "messages" export and the chat template saved into every
checkpoint (which `hf/` and `vllm/` inference apply) all come from the same template file, so
a trajectory is rendered identically when it is learned and when it is replayed.

This module needs only jinja2 (no torch/transformers), so the harness can import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rsr.errors import RsrError

DEFAULT_CHAT_TEMPLATE = "rsr-chatml-v1"
"""Name of the packaged template (`rsr/training/templates/<name>.jinja`)."""

MODEL_TEMPLATE = "model"
"""Recipe value for the checkpoint tokenizer's own chat template (the default)."""

END_OF_TURN = "<|im_end|>"
"""The token that ends an assistant reply in the default template; generation stops on it."""

TURN_START = "<|im_start|>"

ROLES = ("system", "user", "assistant")


def packaged_templates() -> list[str]:
    root = resources.files("rsr.training") / "templates"
    return sorted(p.name.removesuffix(".jinja") for p in root.iterdir() if p.name.endswith(".jinja"))


def load_chat_template(name_or_path: str | Path | None = None) -> str:
    """Return template text: a packaged template by name, or a `.jinja` file by path."""
    name = str(name_or_path or DEFAULT_CHAT_TEMPLATE)
    if name in packaged_templates():
        return (resources.files("rsr.training") / "templates" / f"{name}.jinja").read_text()
    path = Path(name)
    if path.suffix == ".jinja" and path.is_file():
        return path.read_text()
    raise RsrError(
        f"chat template {name!r} is neither a packaged template ({', '.join(packaged_templates())})"
        " nor an existing .jinja file"
    )


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    # Same environment settings as transformers' apply_chat_template, so the text matches it
    # byte for byte; `{% generation %}` is accepted and rendered transparently.
    import jinja2
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _GenerationTag(Extension):
        tags = {"generation"}

        def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body).set_lineno(lineno)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template)


def render_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    chat_template: str | None = None,
    add_generation_prompt: bool = False,
) -> str:
    """Render `[{"role", "content"}, ...]` to model text.

    `chat_template` is template *text* (see `load_chat_template`); the default is the packaged
    `rsr-chatml-v1`. With `add_generation_prompt=True` the text ends where the model's next
    reply begins, which is what inference feeds the model.
    """
    template = chat_template if chat_template is not None else load_chat_template()
    # reasoning_content goes through for templates that render it (Qwen3-style ones do).
    plain = [{"role": m["role"], "content": m["content"],
              **({"reasoning_content": m["reasoning_content"]}
                 if m.get("reasoning_content") else {})} for m in messages]
    return _compile(template).render(messages=plain, add_generation_prompt=add_generation_prompt)
