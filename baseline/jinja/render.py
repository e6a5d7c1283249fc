"""Chat-template oracle for Go tests, as Python transformers renders.

Reads {"bos_token", "eos_token", "cases": [{"template", "messages",
"tools" (optional), "add_generation_prompt", "date_string"}]} on stdin and
writes [{"text": rendered} or {"error": message}, ...] on stdout. The
environment is transformers' apply_chat_template's: a sandboxed Jinja2
with trim_blocks and lstrip_blocks, loop controls, raise_exception, and its
tojson (json.dumps with ensure_ascii=False, keys in their order). Needs
python3 with jinja2 (Debian: python3-jinja2).
"""
import json
import sys

import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

req = json.load(sys.stdin)
out = []
for c in req["cases"]:
    kwargs = dict(messages=c["messages"], tools=c.get("tools"), bos_token=req["bos_token"],
                  eos_token=req["eos_token"], add_generation_prompt=bool(c.get("add_generation_prompt")))
    if "date_string" in c:
        kwargs["date_string"] = c["date_string"]
    try:
        out.append({"text": env.from_string(c["template"]).render(**kwargs)})
    except Exception as e:  # the Go test reports it
        out.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(out, sys.stdout, ensure_ascii=False)
