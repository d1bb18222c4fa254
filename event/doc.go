// Package event defines the Agent Runtime standard's event envelope, the
// event types agentrt emits with one typed payload struct per family, the
// JSON codec, and the notification bus.
//
// # Truth and notification
//
// The durable event log in the store is the source of truth. An event
// exists once the transaction that appended it has committed; only then is
// it given to the Bus, and the Bus carries no events at all: it only wakes
// subscribers, who read what is new from the store by cursor. A slow
// subscriber therefore never loses events and never slows the runtime: a
// wake-up that finds the subscriber's signal channel already full is
// dropped, because the pending signal already tells it to read.
//
// # Ordering
//
// Every event has a per-session Sequence, assigned at commit time, starting
// at 1 and without gaps, and a store-wide Cursor, also assigned at commit.
// Within a session, cursor order equals sequence order. Across sessions,
// cursor order is commit order. Resumable streams (SSE Last-Event-ID) use the
// cursor.
//
// # Wire format
//
// Events encode to the standard's camelCase JSON envelope and validate
// against agentruntime-event.schema.json. Payloads carry bounded previews;
// large data lives in blobs referenced by outputRef.
package event
