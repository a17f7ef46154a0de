"""What the first prompt adds to a task's instruction: its MCP servers and its skills.

As the reference does, the instruction is followed by a list of the task's MCP servers (in the
pack's words) and by an `<available_skills>` block (the Agent Skills convention) naming each
skill found in the sandbox under `environment.skills_dir`: a sub-directory holding a `SKILL.md`
whose YAML front matter has a `name` and a `description`. The task's image puts the skills there
(Harbor copies nothing for Terminus 2 either); the block gives each SKILL.md's absolute path so
the agent can read it with `cat`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from xml.etree.ElementTree import Element, SubElement, indent, tostring

import yaml
from inspect_ai.util import SandboxEnvironment

if TYPE_CHECKING:  # pragma: no cover
    from rsr.harness.prompts.pack import PromptPack
    from rsr.tasks.models import MCPServerSection

_FRONT_MATTER = re.compile(r"^---\n(.*?)\n---", re.DOTALL)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    location: str
    """The SKILL.md path inside the sandbox."""


def mcp_section(servers: Sequence[MCPServerSection], words: PromptPack) -> str:
    """The MCP servers as the first prompt lists them ("" when the task declares none)."""
    if not servers:
        return ""
    text = words.render("mcp_servers")
    for server in servers:
        if server.transport == "stdio":
            text += words.render("mcp_stdio", name=server.name, command=server.command,
                                 args=" ".join(server.args))
        else:
            # Harbor's task model reads `http` as `streamable-http` and names it so.
            transport = "streamable-http" if server.transport == "http" else server.transport
            text += words.render("mcp_url", name=server.name, transport=transport,
                                 url=server.url)
    return text


def front_matter(content: str) -> tuple[str, str] | None:
    """A SKILL.md's (name, description), or None when its front matter lacks either."""
    match = _FRONT_MATTER.match(content)
    if not match:
        return None
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or "name" not in data or "description" not in data:
        return None
    return str(data["name"]), str(data["description"])


async def find_skills(sbx: SandboxEnvironment, skills_dir: str, user: str | None) -> list[Skill]:
    """Skills under `skills_dir` in the sandbox, in `sort` order of their SKILL.md paths."""
    quoted = shlex.quote(skills_dir)
    probe = await sbx.exec(["bash", "-c", f"test -d {quoted}"], user=user, timeout=10)
    if not probe.success:
        return []
    listing = await sbx.exec(
        ["bash", "-c", f"find {quoted} -mindepth 2 -maxdepth 2 -name SKILL.md -type f | sort"],
        user=user, timeout=10)
    if not listing.success or not listing.stdout.strip():
        return []
    skills: list[Skill] = []
    for path in listing.stdout.strip().splitlines():
        read = await sbx.exec(["bash", "-c", f"cat {shlex.quote(path)}"], user=user, timeout=10)
        if not read.success or not read.stdout:
            continue
        found = front_matter(read.stdout)
        if found is not None:
            skills.append(Skill(found[0], found[1], path))
    return skills


def skills_section(skills: Sequence[Skill]) -> str:
    """The `<available_skills>` block (two-space indented XML after a newline), or ""."""
    if not skills:
        return ""
    root = Element("available_skills")
    for skill in skills:
        entry = SubElement(root, "skill")
        SubElement(entry, "name").text = skill.name
        SubElement(entry, "description").text = skill.description
        SubElement(entry, "location").text = skill.location
    indent(root, space="  ")
    return "\n" + tostring(root, encoding="unicode")
