// A small client of the agentrt HTTP API in TypeScript: it submits a
// turn, waits for it to end, and reads the session's snapshot. Its types
// come from the OpenAPI document (httpapi/openapi.json), generated into
// agentrt.d.ts by openapi-typescript (npm run generate); npm run check
// type-checks this file against them, so a body whose schema lost its
// properties, or a field renamed, fails the check.
import type { components, paths } from "./agentrt";

type Schemas = components["schemas"];
type SubmitTurnRequest = paths["/v1/turns"]["post"]["requestBody"]["content"]["application/json"];
type SubmitTurnResult = paths["/v1/turns"]["post"]["responses"]["202"]["content"]["application/json"];
type Request = paths["/v1/requests/{turnId}"]["get"]["responses"]["200"]["content"]["application/json"];
type Snapshot = paths["/v1/sessions/{sessionId}"]["get"]["responses"]["200"]["content"]["application/json"];

/** ApiError is an error answer: the server's problem details. */
export class ApiError extends Error {
  constructor(readonly problem: Schemas["Problem"]) {
    super(`${problem.code}: ${problem.detail}`);
  }
}

/** Agentrt calls one server with one bearer token. */
export class Agentrt {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? null : JSON.stringify(body),
    });
    if (!res.ok) {
      throw new ApiError((await res.json()) as Schemas["Problem"]);
    }
    return (await res.json()) as T;
  }

  submitTurn(req: SubmitTurnRequest): Promise<SubmitTurnResult> {
    return this.call("POST", "/v1/turns", req);
  }

  getRequest(turnId: string): Promise<Request> {
    return this.call("GET", `/v1/requests/${encodeURIComponent(turnId)}`);
  }

  getSession(sessionId: string): Promise<Snapshot> {
    return this.call("GET", `/v1/sessions/${encodeURIComponent(sessionId)}`);
  }
}

const ended: readonly Schemas["TaskStatus"][] = ["completed", "failed", "cancelled", "timed_out", "lost"];

/** ask submits input to agent, waits for the turn to end and returns what the snapshot says of its thread. */
export async function ask(api: Agentrt, agent: string, input: string): Promise<string> {
  let turn: SubmitTurnResult;
  try {
    turn = await api.submitTurn({ agent, input, multitask: "enqueue" });
  } catch (e) {
    if (e instanceof ApiError && e.problem.code === "overloaded") {
      return "the runtime is overloaded; try again later";
    }
    throw e;
  }
  let request = await api.getRequest(turn.turnId);
  while (!ended.includes(request.status)) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    request = await api.getRequest(turn.turnId);
  }
  const snapshot: Snapshot = await api.getSession(turn.sessionId);
  const thread: Schemas["ThreadRead"] | undefined = snapshot.threads?.find((t) => t.threadId === turn.threadId);
  const status: Schemas["ThreadStatus"] = thread?.status ?? "unknown";
  const turns: number = thread?.turns?.length ?? 0;
  const cost: number = thread?.costState.costUsd ?? 0;
  return `session ${snapshot.sessionId} (${snapshot.agent}): thread ${turn.threadId} is ${status} after ${turns} turn(s), $${cost.toFixed(4)}`;
}
