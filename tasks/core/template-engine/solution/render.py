#!/usr/bin/env python3
"""A small Handlebars-like renderer: tokenize per line, parse into a tree, render with scopes."""
import json
import re
import sys

MISSING = object()
FILTERS = {"upper", "lower", "trim", "length", "default", "join"}
STANDALONE = re.compile(r"[ \t]*(\{\{\s*(?:[#/!][^{}]*|else\s*)\}\})[ \t]*(\r?\n)?")
FILTER_RE = re.compile(r'\s*\|\s*([A-Za-z_]+)(?::"([^"]*)")?\s*')


class TemplateError(Exception):
    pass


def tokenize(src: str):
    tokens = []
    for line in src.splitlines(keepends=True):
        m = STANDALONE.fullmatch(line)
        if m and line.count("{{") == 1:
            line = m.group(1)
        pos = 0
        while True:
            i = line.find("{{", pos)
            if i < 0:
                tokens.append(("text", line[pos:]))
                break
            tokens.append(("text", line[pos:i]))
            if line.startswith("{{{", i):
                j = line.find("}}}", i + 3)
                if j < 0:
                    raise TemplateError("unclosed {{{")
                tokens.append(("var", line[i + 3:j].strip(), False))
                pos = j + 3
                continue
            j = line.find("}}", i + 2)
            if j < 0:
                raise TemplateError("unclosed {{")
            tokens.append(tag(line[i + 2:j].strip()))
            pos = j + 2
    return [t for t in tokens if t != ("text", "")]


def tag(body: str):
    if body.startswith("!"):
        return ("comment",)
    if body == "else":
        return ("else",)
    if body.startswith("#"):
        kind, _, path = body[1:].partition(" ")
        if kind not in ("if", "each") or not path.strip():
            raise TemplateError(f"bad block {body!r}")
        return ("open", kind, path.strip())
    if body.startswith("/"):
        return ("close", body[1:].strip())
    return ("var", body, True)


def parse_expr(expr: str):
    m = re.match(r"[^\s|]+", expr)
    if not m:
        raise TemplateError(f"empty expression {expr!r}")
    path, rest, filters = m.group(0), expr[m.end():], []
    while rest.strip():
        f = FILTER_RE.match(rest)
        if not f or f.group(1) not in FILTERS:
            raise TemplateError(f"bad filter in {expr!r}")
        if f.group(1) in ("default", "join") and f.group(2) is None:
            raise TemplateError(f"filter {f.group(1)} needs an argument")
        filters.append((f.group(1), f.group(2)))
        rest = rest[f.end():]
    return path, filters


def parse(tokens):
    root = {"kind": "root", "body": [], "else": None}
    stack = [root]
    for t in tokens:
        cur = stack[-1]
        target = cur["else"] if cur["else"] is not None else cur["body"]
        if t[0] == "text":
            target.append(t)
        elif t[0] == "var":
            target.append(("var", *parse_expr(t[1]), t[2]))
        elif t[0] == "open":
            node = {"kind": t[1], "path": t[2], "body": [], "else": None}
            target.append(("block", node))
            stack.append(node)
        elif t[0] == "else":
            if cur is root or cur["else"] is not None:
                raise TemplateError("misplaced {{else}}")
            cur["else"] = []
        elif t[0] == "close":
            if cur is root or cur["kind"] != t[1]:
                raise TemplateError(f"unexpected {{{{/{t[1]}}}}}")
            stack.pop()
    if len(stack) > 1:
        raise TemplateError(f"unclosed {{{{#{stack[-1]['kind']}}}}}")
    return root["body"]


def lookup(path: str, scopes):
    segs = path.split(".")
    first = segs[0]
    if first == "@index":
        val = next((s["index"] for s in reversed(scopes) if "index" in s), MISSING)
    elif first == "this":
        val = next((s["item"] for s in reversed(scopes) if "index" in s), scopes[0]["item"])
    else:
        val = MISSING
        for s in reversed(scopes):
            if isinstance(s["item"], dict) and first in s["item"]:
                val = s["item"][first]
                break
    for seg in segs[1:]:
        if isinstance(val, dict) and seg in val:
            val = val[seg]
        elif isinstance(val, list) and seg.isdigit() and int(seg) < len(val):
            val = val[int(seg)]
        else:
            return MISSING
    return val


def show(v) -> str:
    if v is MISSING or v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def truthy(v) -> bool:
    return not (v is MISSING or v is None or v is False or (isinstance(v, (int, float, str, list, dict)) and not isinstance(v, bool) and not v))


def apply(v, name, arg):
    if name == "upper":
        return show(v).upper()
    if name == "lower":
        return show(v).lower()
    if name == "trim":
        return show(v).strip()
    if name == "length":
        if v is MISSING or v is None:
            return 0
        return len(v) if isinstance(v, (list, dict, str)) else len(show(v))
    if name == "default":
        return v if truthy(v) else arg
    if name == "join":
        return arg.join(show(x) for x in v) if isinstance(v, list) else v
    raise TemplateError(name)


def escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;")


def render(nodes, scopes, out):
    for n in nodes:
        if n[0] == "text":
            out.append(n[1])
        elif n[0] == "var":
            _, path, filters, esc = n
            v = lookup(path, scopes)
            for name, arg in filters:
                v = apply(v, name, arg)
            s = show(v)
            out.append(escape(s) if esc else s)
        else:
            node = n[1]
            v = lookup(node["path"], scopes)
            if node["kind"] == "if":
                part = node["body"] if truthy(v) else (node["else"] or [])
                render(part, scopes, out)
            elif isinstance(v, list) and v:
                for i, item in enumerate(v):
                    render(node["body"], scopes + [{"item": item, "index": i}], out)
            else:
                render(node["else"] or [], scopes, out)


def main(argv) -> int:
    # newline="": keep \r\n so standalone CRLF lines vanish whole and other lines keep their endings.
    src = open(argv[1], encoding="utf-8", newline="").read()
    ctx = json.load(open(argv[2], encoding="utf-8"))
    try:
        tree = parse(tokenize(src))
        out: list[str] = []
        render(tree, [{"item": ctx}], out)
    except TemplateError as e:
        print(f"template error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
