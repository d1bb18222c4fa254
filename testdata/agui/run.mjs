// run.mjs drives agentrt's AG-UI endpoint with the real AG-UI client:
// @ag-ui/client's HttpAgent, which checks every event it receives against
// @ag-ui/core's schemas and the protocol's sequence rules, and answers an
// interrupt the way a front end does (buildResumeArray, a resume run).
//
//   AGUI_TOKEN=… node run.mjs --url http://…/v1/agui --thread ID --message TEXT \
//     [--agent NAME] [--answer '{"decision":"approve"}']
//
// It sends the message as a user message and runs the agent; while the run
// ends with an interrupt and --answer is given, it resolves every pending
// interrupt with that payload and runs again. It prints one JSON object:
// each run's event types, outcome and interrupts (or the error that ended
// it), the conversation the client holds, its state, and every warning
// or error the client logged (a client that strips or drops material
// says so on the console).
import { HttpAgent, buildResumeArray, randomUUID } from "@ag-ui/client";

function args(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`usage: run.mjs --url URL --thread ID --message TEXT [--agent NAME] [--answer JSON]; got ${argv[i]}`);
    }
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["url", "thread", "message"]) {
    if (!out[k]) throw new Error(`run.mjs: --${k} is required`);
  }
  return out;
}

const opts = args(process.argv.slice(2));
const token = process.env.AGUI_TOKEN;
if (!token) throw new Error("run.mjs: AGUI_TOKEN is required");

// What the client logs about events it strips, drops or rejects.
const logged = [];
for (const level of ["warn", "error"]) {
  console[level] = (...parts) => logged.push(`${level}: ${parts.map(String).join(" ")}`);
}

const agent = new HttpAgent({
  url: opts.url,
  threadId: opts.thread,
  headers: { Authorization: `Bearer ${token}` },
});
agent.addMessage({ id: randomUUID(), role: "user", content: opts.message });

const runs = [];
async function run(params) {
  const r = { types: [] };
  runs.push(r);
  const subscriber = {
    onEvent: ({ event }) => {
      r.types.push(event.type);
    },
    onRunFinishedEvent: (p) => {
      r.outcome = p.outcome;
      if (p.outcome === "interrupt") {
        r.interrupts = p.interrupts.map((i) => ({ id: i.id, reason: i.reason, toolCallId: i.toolCallId }));
      }
    },
    onRunErrorEvent: ({ event }) => {
      r.error = { message: event.message, code: event.code };
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (err) {
    r.thrown = String(err?.message ?? err);
  }
}

const forwardedProps = opts.agent ? { agent: opts.agent } : {};
await run({ forwardedProps });
for (let round = 0; opts.answer && agent.pendingInterrupts.length > 0 && round < 5; round++) {
  const payload = JSON.parse(opts.answer);
  const responses = Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, { status: "resolved", payload }]));
  await run({ forwardedProps, resume: buildResumeArray(agent.pendingInterrupts, responses) });
}

process.stdout.write(
  JSON.stringify({
    runs,
    pendingInterrupts: agent.pendingInterrupts.map((i) => i.id),
    messages: agent.messages.map((m) => ({
      role: m.role,
      content: m.content,
      toolCalls: m.toolCalls?.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
      toolCallId: m.toolCallId,
    })),
    state: agent.state,
    logged,
  }) + "\n",
);
