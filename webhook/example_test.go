package webhook_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/webhook"
)

// A receiver checks a delivery with Verify, using the secret it was given.
func ExampleVerify() {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	sent := time.Unix(1674087231, 0)
	body := []byte(`{"type":"task.completed","data":{"taskId":"task_01"}}`)

	// What the sender puts on the request.
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")
	h.Set(webhook.HeaderTimestamp, "1674087231")
	h.Set(webhook.HeaderSignature, webhook.Sign(secret, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", sent, body))
	fmt.Println(h.Get(webhook.HeaderSignature))

	// What the receiver does, a few seconds later.
	fmt.Println(webhook.Verify(secret, h, body, sent.Add(3*time.Second), 5*time.Minute))
	fmt.Println(webhook.Verify(secret, h, []byte(`{"forged":true}`), sent.Add(3*time.Second), 5*time.Minute))
	fmt.Println(secret)
	// Output:
	// v1,TDfMJN5vcOC2KUZZd4NMAnuXhlL9HQz3wMPOA8Iuy7g=
	// <nil>
	// webhook signature does not match
	// whsec_…redacted
}
