package httpapi

import _ "embed"

// openapiJSON is the OpenAPI 3.1 document served at /v1/openapi.json.
// Its paths, parameters, statuses and descriptions are written by hand;
// the schemas of the bodies are generated from the Go types the handlers
// encode and decode (see routeBodies in openapi_test.go), and a test
// fails when they differ. After changing a body's type, run
// go generate ./httpapi.
//
//go:generate go test -run ^TestOpenAPIDocumentIsGenerated$ -update .
//go:embed openapi.json
var openapiJSON []byte
