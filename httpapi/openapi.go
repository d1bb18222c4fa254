package httpapi

import _ "embed"

// openapiJSON is the OpenAPI 3.1 document served at /v1/openapi.json.
//
//go:embed openapi.json
var openapiJSON []byte
