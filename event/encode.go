package event

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/agentrt/agentrt/internal/jsonwrite"
)

// encodeBufs holds buffers for encoding envelopes; the encoding is
// copied out at its exact size, so a buffer is never shared.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// encode returns e's envelope encoding in a slice of its own.
func encode(e *Event) ([]byte, error) {
	bp := encodeBufs.Get().(*[]byte)
	b, err := appendEnvelope((*bp)[:0], e)
	if err != nil {
		encodeBufs.Put(bp)
		return nil, err
	}
	out := make([]byte, len(b))
	copy(out, b)
	if cap(b) <= 64<<10 { // do not keep a huge event's buffer
		*bp = b
		encodeBufs.Put(bp)
	}
	return out, nil
}

// appendEnvelope appends e's envelope encoding to dst: the bytes
// json.Marshal gives for the envelope (field order, omitempty, the
// escaping of <, > and &, U+2028 and U+2029, invalid UTF-8 as U+FFFD),
// written field by field instead of by reflection. The payload and a
// permission decision, which vary by type, still go through
// encoding/json. TestEnvelopeMatchesEncodingJSON and FuzzEnvelope compare
// the two.
func appendEnvelope(dst []byte, e *Event) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, string(e.Type))
	dst = append(dst, `,"eventId":`...)
	dst = appendString(dst, e.EventID)
	dst = append(dst, `,"timestamp":"`...)
	// time.Time's MarshalJSON is AppendText (RFC 3339 with nanoseconds,
	// an error for years outside 0–9999) in quotes.
	dst, err := e.Timestamp.AppendText(dst)
	if err != nil {
		return nil, fmt.Errorf("encoding the timestamp: %w", err)
	}
	dst = append(dst, `","schemaVersion":`...)
	dst = appendString(dst, e.SchemaVersion)
	dst = appendOmitEmpty(dst, `,"runtimeId":`, e.RuntimeID)
	dst = append(dst, `,"sequence":`...)
	dst = strconv.AppendInt(dst, e.Sequence, 10)
	dst = appendOmitEmpty(dst, `,"sessionId":`, e.SessionID)
	dst = appendOmitEmpty(dst, `,"threadId":`, e.ThreadID)
	dst = appendOmitEmpty(dst, `,"turnId":`, e.TurnID)
	dst = appendOmitEmpty(dst, `,"taskId":`, e.TaskID)
	dst = appendOmitEmpty(dst, `,"runId":`, e.RunID)
	dst = appendOmitEmpty(dst, `,"attemptId":`, e.AttemptID)
	dst = appendOmitEmpty(dst, `,"parentTaskId":`, e.ParentTaskID)
	dst = appendOmitEmpty(dst, `,"rootTaskId":`, e.RootTaskID)
	dst = appendOmitEmpty(dst, `,"stepId":`, e.StepID)
	dst = appendOmitEmpty(dst, `,"toolCallId":`, e.ToolCallID)
	dst = appendOmitEmpty(dst, `,"actionId":`, e.ActionID)
	dst = appendOmitEmpty(dst, `,"subagentId":`, e.SubagentID)
	dst = appendOmitEmpty(dst, `,"jobId":`, e.JobID)
	dst = appendOmitEmpty(dst, `,"jobItemId":`, e.JobItemID)
	dst = appendOmitEmpty(dst, `,"evidenceId":`, e.EvidenceID)
	dst = appendOmitEmpty(dst, `,"queueId":`, e.QueueID)
	dst = appendOmitEmpty(dst, `,"traceId":`, e.TraceID)
	dst = appendOmitEmpty(dst, `,"spanId":`, e.SpanID)
	dst = appendOmitEmpty(dst, `,"status":`, e.Status)
	dst = appendOmitEmpty(dst, `,"statusReason":`, string(e.StatusReason))
	dst = appendOmitEmpty(dst, `,"outputRef":`, e.OutputRef)
	if e.PermissionDecision != nil {
		b, err := json.Marshal(e.PermissionDecision)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"permissionDecision":`...)
		dst = append(dst, b...)
	}
	if e.DeliveryState != nil {
		b, err := json.Marshal(e.DeliveryState)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"deliveryState":`...)
		dst = append(dst, b...)
	}
	dst = append(dst, `,"payload":`...)
	if e.Payload == nil {
		dst = append(dst, "null"...)
	} else {
		b, err := json.Marshal(e.Payload)
		if err != nil {
			return nil, err
		}
		dst = append(dst, b...)
	}
	if len(e.Refs) > 0 {
		dst = append(dst, `,"refs":{`...)
		keys := make([]string, 0, len(e.Refs))
		for k := range e.Refs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, e.Refs[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

func appendOmitEmpty(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

// appendString appends s as encoding/json writes a string with HTML
// escaping on (json.Marshal's default).
func appendString(dst []byte, s string) []byte { return jsonwrite.AppendString(dst, s, true) }
