// Package evidence is the format of agentrt's evidence bundles: a
// deterministic .tar.gz holding one request's facts (its events, the
// session and thread snapshots, policy decisions, approvals, tool calls,
// the session's receipt chain, provider raw-response refs and, when
// asked, artifact contents and a health snapshot) under a manifest that
// lists the size and SHA-256 of every other member.
//
// The package knows the format only: a Builder assembles and writes a
// bundle, Verify reads one as a stream and names the first broken member,
// and Sign adds an ed25519 signature over the manifest. What goes into a
// bundle is the runtime's business (agentrt.Runtime.ExportEvidence); this
// package imports nothing above store.
//
// # Layout
//
// manifest.json is always the first member, signature.json (when signed)
// the last. The members between come in the order the builder added them;
// their names are the constants of this package and artifacts/sha256-HEX
// for the content-addressed artifacts. docs/evidence.md describes every
// member and manifest field.
//
// # Determinism
//
// The same inputs give byte-identical bundles: members keep their order,
// every tar header carries one fixed time (the request's end, or the Unix
// epoch), mode 0644 and no owner, the gzip header carries no name or
// time, and the bundle id is derived from the manifest's content.
package evidence
