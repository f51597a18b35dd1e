// List thoughtbox's tool through the MCP TypeScript SDK's client (stdio; the
// SDK checks the tools/list answer against its own Tool schema) and compile
// its input schema with Ajv (JSON Schema 2020-12): sample calls are checked
// against each operation's entry in $defs, then made.
//
//   npm install @modelcontextprotocol/sdk ajv
//   node benches/clients/check_schema.mjs target/debug/thoughtbox
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv2020 from "ajv/dist/2020.js";

const binary = process.argv[2] ?? "target/debug/thoughtbox";
const dir = mkdtempSync(join(tmpdir(), "thoughtbox-schema-"));
const transport = new StdioClientTransport({ command: binary, args: ["--db", join(dir, "check.db")] });
const client = new Client({ name: "schema-check", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
if (tools.length !== 1) throw new Error(`expected one tool, got ${tools.length}`);
const tool = tools[0];
const schema = tool.inputSchema;
console.log(`TS SDK listed ${tool.name}: ${JSON.stringify(tool).length} bytes as JSON`);

const ajv = new Ajv2020({ strict: true, allErrors: true });
const top = ajv.compile(schema);
console.log("Ajv 2020-12 (strict mode) compiled the input schema");

const samples = [
  ["start_new", { sessionTitle: "schema check" }, true],
  ["cipher", { brief: true }, true],
  ["thought", { thought: "first step", nextThoughtNeeded: true }, true],
  ["thought", { thought: "no flag" }, false],
  ["read_thoughts", { last: 1 }, true],
  ["session", { subOperation: "get", includeThoughts: false }, true],
  ["mental_models", { subOperation: "get_model" }, false],
];
for (const [operation, args, valid] of samples) {
  if (!top({ operation, args })) throw new Error(`top level refused ${operation}: ${ajv.errorsText(top.errors)}`);
  const key = args.subOperation ? `${operation}.${args.subOperation}` : operation;
  const check = ajv.compile(schema.$defs[key]);
  const ok = check(args);
  if (ok !== valid) throw new Error(`${key} ${JSON.stringify(args)}: expected ${valid}, ${ajv.errorsText(check.errors)}`);
  console.log(`  ${operation} ${JSON.stringify(args)}: ${ok ? "valid" : `refused (${ajv.errorsText(check.errors)})`}`);
  if (valid) {
    const result = await client.callTool({ name: tool.name, arguments: { operation, args } });
    if (result.isError) throw new Error(`${operation} failed: ${JSON.stringify(result.content)}`);
  }
}
console.log("TS SDK: every valid sample called successfully");
await client.close();
