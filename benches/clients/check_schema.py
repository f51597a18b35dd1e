"""List thoughtbox's tool through the MCP Python SDK's client (stdio) and check
its input schema with a JSON Schema validator: the schema against the 2020-12
meta-schema, the rules the Anthropic API and Cursor put on tool schemas, and
sample calls against each operation's entry in $defs. Then make those calls.

    python3 -m venv V && V/bin/pip install mcp jsonschema
    V/bin/python benches/clients/check_schema.py target/debug/thoughtbox

Prints what it checked; exits non-zero on the first failure.
"""

import asyncio
import json
import sys
import tempfile

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

COMBINATORS = ("oneOf", "anyOf", "allOf")

# (operation, args, valid?)
SAMPLES = [
    ("start_new", {"sessionTitle": "schema check", "tags": ["check"]}, True),
    ("cipher", {"brief": True}, True),
    ("thought", {"thought": "first step", "nextThoughtNeeded": True}, True),
    ("thought", {"thought": "no flag"}, False),
    ("thought", {"thought": "x", "nextThoughtNeeded": True, "thoughtNumber": 0}, False),
    ("read_thoughts", {"range": [1, 1]}, True),
    ("session", {"subOperation": "search", "query": "step", "limit": 5}, True),
    ("session", {"subOperation": "search", "limit": 5}, False),
    ("knowledge", {"subOperation": "write_scratchpad", "topic": "t", "content": "c"}, True),
]


def walk(schema, path="$"):
    """Every (path, keyword) of the schema."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            yield path, k
            if k == "properties":
                for name, sub in v.items():
                    yield from walk(sub, f"{path}.properties.{name}")
            else:
                yield from walk(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            yield from walk(v, f"{path}[{i}]")


def entry(schema, operation, args):
    defs = schema["$defs"]
    sub = args.get("subOperation")
    return defs[f"{operation}.{sub}"] if sub else defs[operation]


async def main(binary):
    with tempfile.TemporaryDirectory() as d:
        params = StdioServerParameters(command=binary, args=["--db", f"{d}/check.db"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert len(tools) == 1, tools
                tool = tools[0]
                schema = tool.input_schema
                size = len(json.dumps(tool.model_dump(by_alias=True, exclude_none=True), separators=(",", ":")))
                print(f"python SDK listed {tool.name}: {size} bytes as JSON, {len(schema['$defs'])} operation entries")
                jsonschema.Draft202012Validator.check_schema(schema)
                for d_key, d in schema["$defs"].items():
                    jsonschema.Draft202012Validator.check_schema(d)
                print("schema and every $defs entry: valid JSON Schema 2020-12")
                assert schema["type"] == "object" and not any(k in schema for k in COMBINATORS)
                used = {k for _, k in walk(schema)}
                bad = used & {*COMBINATORS, "$ref", "if", "not"}
                assert not bad, bad
                assert '"type": [' not in json.dumps(schema), "a type list"
                print("no oneOf/anyOf/allOf/$ref anywhere, no type lists, top level type object")
                top = jsonschema.Draft202012Validator(schema)
                for operation, args, valid in SAMPLES:
                    top.validate({"operation": operation, "args": args})
                    errors = list(jsonschema.Draft202012Validator(entry(schema, operation, args)).iter_errors(args))
                    assert (not errors) == valid, (operation, args, [e.message for e in errors])
                    said = "valid" if valid else f"refused ({errors[0].message})"
                    print(f"  {operation} {json.dumps(args)}: {said}")
                    if valid:
                        result = await session.call_tool(tool.name, {"operation": operation, "args": args})
                        assert not result.is_error, result
                print("python SDK: every valid sample called successfully")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "target/debug/thoughtbox"))
