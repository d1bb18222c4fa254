package openairesponses

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentrt/agentrt/model"
)

// classify turns an error from the SDK or the stream into a *model.Error,
// or returns ctx's cancellation cause (see model.TransportError).
func classify(ctx context.Context, err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	var api *responses.Error
	if errors.As(err, &api) {
		var h http.Header
		if api.Response != nil {
			h = api.Response.Header
		}
		return model.HTTPError(api.StatusCode, h, cmp.Or(api.Code, api.Type), api.Message)
	}
	// The SDK ends the stream with a StreamError for an event whose data
	// has an "error" member: the shape the API sends in production
	// ({"type":"error","error":{…}}), unlike the documented flat error
	// event, which arrives as a ResponseErrorEvent.
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(se.Event.Data, &body) != nil {
			return model.MalformedResponse("decoding a stream error event: %s", se.Event.Data)
		}
		return model.StreamError(cmp.Or(body.Error.Code, body.Error.Type), body.Error.Message)
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return model.MalformedResponse("decoding a stream event: %v", err)
	}
	return model.TransportError(ctx, err)
}
