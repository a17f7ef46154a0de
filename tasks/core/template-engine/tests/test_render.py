import json
import os
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

CTX = {
    "name": "Ada", "html": "<b>\"Tom\" & 'Jerry'</b>", "n": 3, "f": 2.5, "zero": 0, "fz": 0.0, "t": True, "fl": False,
    "nil": None, "empty": "", "eo": {}, "el": [], "list": [1, "two", 3.5],
    "objs": [{"name": "a", "qty": 1, "tags": ["x", "y"]}, {"name": "b", "qty": 0, "tags": []}],
    "user": {"name": "Bob", "roles": ["admin", "dev"], "addr": {"city": "Oslo"}},
    "nested": [[1, 2], [3]], "uni": "Grüße", "pad": "  hi  ", "mixed": {"k": [1, {"z": None}]},
}
ERR = None  # expected: exit 2 and empty stdout
CASES = {
    "variables": [
        ("Hi {{name}}!", "Hi Ada!"),
        ("{{ user.addr.city }}|{{user.roles.1}}|{{ list.0 }}|{{list.9}}|{{nope.x}}|{{name.x}}", "Oslo|dev|1|||"),
        ("{{ html }}", "&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;"),
        ("{{{ html }}}", "<b>\"Tom\" & 'Jerry'</b>"),
        ("{{n}} {{f}} {{t}} {{fl}} [{{nil}}] [{{missing}}] {{zero}}", "3 2.5 true false [] [] 0"),
        ("{{{list}}} {{{mixed}}} {{{uni}}} {{{eo}}}", '[1,"two",3.5] {"k":[1,{"z":null}]} Grüße {}'),
        ("{{list}}", "[1,&quot;two&quot;,3.5]"),
        ("a{{! hidden }}b {{!x}}c", "ab c"),
        ("line1\n{{name}}\n  {{ name }}  \n", "line1\nAda\n  Ada  \n"),
        ("< & > stay {{ uni }}", "< & > stay Grüße"),
    ],
    "filters": [
        ("{{ name | upper }} {{name|lower}}", "ADA ada"),
        ("[{{ pad | trim }}] [{{pad}}]", "[hi] [  hi  ]"),
        ("{{ list | length }} {{ user | length }} {{ uni | length }} {{ missing | length }} {{ n | length }} {{ nil | length}}", "3 3 5 0 1 0"),
        ('{{ empty | default:"none" }} {{ zero | default:"0?" }} {{ name | default:"x" }} {{ missing | default:"m" }} {{ list | default:"l" }}',
         "none 0? Ada m [1,&quot;two&quot;,3.5]"),
        ('{{ user.roles | join:", " }} {{ objs.0.tags | join:"|" }} {{ name | join:"-" }} {{ list | join:"" }}', "admin, dev x|y Ada 1two3.5"),
        ('{{ user.roles | join:", " | upper }}', "ADMIN, DEV"),
        ('{{ missing | default:"<none>" }}', "&lt;none&gt;"),
        ('{{{ missing | default:"<none>" }}}', "<none>"),
        ("{{ pad | trim | length }}", "2"),
        ('{{ name | default:"a|b" | lower }} {{ el | default:"E" }} {{ eo | default:"O" }}', "ada E O"),
    ],
    "each_blocks": [
        ("{{#each list}}[{{this}}]{{/each}}", "[1][two][3.5]"),
        ("{{#each objs}}{{@index}}:{{name}}={{qty}};{{/each}}", "0:a=1;1:b=0;"),
        ("{{#each objs}}{{name}}({{#each tags}}{{this}}@{{@index}}{{/each}}){{/each}}", "a(x@0y@1)b()"),
        ("{{#each objs}}{{name}}/{{ user.name }}/{{n}};{{/each}}", "a/Bob/3;b/Bob/3;"),
        ("{{#each nested}}<{{#each this}}{{this}}{{/each}}>{{/each}}", "<12><3>"),
        ("{{#each el}}x{{else}}none{{/each}}|{{#each user}}x{{else}}obj{{/each}}|{{#each missing}}x{{/each}}", "none|obj|"),
        ("{{#each objs}}{{this.name}}{{this.tags.0}}{{/each}}", "axb"),
        ("{{#each objs}}{{#each tags}}{{name}}{{/each}}{{/each}}", "aa"),
    ],
    "if_blocks": [
        ("{{#if t}}yes{{/if}}{{#if fl}}no{{/if}}", "yes"),
        ("{{#if zero}}a{{else}}b{{/if}} {{#if empty}}a{{else}}b{{/if}} {{#if list}}a{{else}}b{{/if}} {{#if nil}}a{{else}}b{{/if}} "
         "{{#if missing}}a{{else}}b{{/if}} {{#if eo}}a{{else}}b{{/if}} {{#if fz}}a{{else}}b{{/if}} {{#if el}}a{{else}}b{{/if}}", "b b a b b b b b"),
        ("{{#if user.addr}}{{user.addr.city}}{{/if}}", "Oslo"),
        ("{{#each objs}}{{#if qty}}{{name}} in stock{{else}}{{name}} sold out{{/if}}, {{/each}}", "a in stock, b sold out, "),
        ("{{#if t}}{{#if fl}}x{{else}}y{{/if}}{{else}}z{{/if}}", "y"),
        ("{{#if f}}F{{/if}}{{#if pad}}P{{/if}}{{#if user}}U{{/if}}", "FPU"),
    ],
    "standalone_lines": [
        ("{{#if t}}\nA\n{{/if}}\nB\n", "A\nB\n"),
        ("  {{#each objs}}  \n- {{name}}\n  {{/each}}\nend", "- a\n- b\nend"),
        ("x\n{{! comment }}\ny\n", "x\ny\n"),
        ("{{#if fl}}\nA\n{{else}}\nB\n{{/if}}\n", "B\n"),
        ("- {{#if t}}yes{{/if}}\n", "- yes\n"),
        ("{{#if t}}{{/if}}\nz\n", "\nz\n"),
        ("{{name}}\n{{#each list}}\n{{this}}\n{{/each}}\n", "Ada\n1\ntwo\n3.5\n"),
        ("{{#if t}}\r\nA\r\n{{/if}}\r\n", "A\r\n"),
        ("{{#if t}}\nA\n{{/if}}", "A\n"),
        ("\t{{#each el}}\t\nx\n{{else}}\nnone\n{{/each}}\n", "none\n"),
    ],
    "errors": [
        ("{{name", ERR), ("{{#if t}}x", ERR), ("{{#if t}}x{{/each}}", ERR), ("x{{/if}}", ERR), ("{{else}}", ERR),
        ("{{#if t}}a{{else}}b{{else}}c{{/if}}", ERR), ("{{#with user}}x{{/with}}", ERR), ("{{ }}", ERR),
        ("{{ name | shout }}", ERR), ("{{{ name }}", ERR), ("{{#if fl}}{{ name | nope }}{{/if}}", ERR),
        ("{{#each}}x{{/each}}", ERR), ("{{ name }}\n{{ n\n}}", ERR), ("ok {{name}} then {{#each list}}{{this}}", ERR),
    ],
}


def main() -> int:
    results = {m: 1 for m in CASES}
    notes = []
    exe = "/app/render"
    if not os.access(exe, os.X_OK):
        notes.append(f"{exe} missing or not executable")
        results = {m: 0 for m in CASES}
    else:
        d = rc.scratch()
        ctxf = rc.put(os.path.join(d, "ctx.json"), json.dumps(CTX, ensure_ascii=False).encode("utf-8"))
        for m, cases in CASES.items():
            for i, (tmpl, want) in enumerate(cases):
                tf = os.path.join(d, f"{m}{i}.tmpl")
                rc.put(tf, tmpl.encode("utf-8"))
                r = rc.run([exe, tf, ctxf], timeout=20, text=False)
                got = r.stdout.decode("utf-8", "replace")
                ok = (r.returncode == 2 and got == "") if want is ERR else (r.returncode == 0 and got == want)
                if not ok:
                    results[m] = 0
                    notes.append(f"{m}[{i}] template {tmpl!r}: want {'error' if want is ERR else repr(want)}, "
                                 f"got rc={r.returncode} {got!r} {r.stderr.decode(errors='replace')[-150:]!r}")
    reward = int(all(results.values()))
    print("\n".join(notes))
    print(json.dumps(results))
    rc.write_reward(reward, results)
    return 0 if reward else 1


sys.exit(main())
