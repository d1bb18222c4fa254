// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// the protobuf ExportTraceServiceRequest of every POST /v1/traces, as a
// collector would, and keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running receiver.
type Receiver struct {
	srv *httptest.Server

	mu        sync.Mutex
	spans     []Span           // guarded by mu
	resources []map[string]any // guarded by mu
	problems  []string         // guarded by mu
}

// Span is a received span, ids in lowercase hex (ParentID empty for a
// root span), attributes by key: string, int64, float64, bool or
// []string values.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string
	Kind                      tracepb.Span_SpanKind
	Attrs                     map[string]any
	Status                    tracepb.Status_StatusCode
	StatusMessage             string
	Start                     uint64
}

// NewReceiver starts a receiver; Cleanup closes it.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.problems = append(r.problems, "content type "+ct)
	}
	if err != nil {
		r.problems = append(r.problems, "decoding: "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range msg.GetResourceSpans() {
		r.resources = append(r.resources, attrMap(rs.GetResource().GetAttributes()))
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(), Attrs: attrMap(s.GetAttributes()),
					Status: s.GetStatus().GetCode(), StatusMessage: s.GetStatus().GetMessage(), Start: s.GetStartTimeUnixNano(),
				})
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch x := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = x.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = x.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = x.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var ss []string
			for _, e := range x.ArrayValue.GetValues() {
				ss = append(ss, e.GetStringValue())
			}
			m[kv.GetKey()] = ss
		default:
			m[kv.GetKey()] = nil
		}
	}
	return m
}

// Spans returns the spans received so far, by start time, and fails t
// for every request the receiver could not take.
func (r *Receiver) Spans(t testing.TB) []Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Errorf("OTLP receiver: %s", p)
	}
	out := slices.Clone(r.spans)
	slices.SortStableFunc(out, func(a, b Span) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	return out
}

// Resources returns the resource attributes of every export received.
func (r *Receiver) Resources() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.resources)
}
