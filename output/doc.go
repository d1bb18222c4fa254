// Package output keeps secrets and tool output under control: a Redactor
// removes secrets from text, JSON and streams (a runtime passes
// everything it writes through one), and a Store keeps outputs too
// large to show inline as content-addressed files, written as they
// stream, so that a tool printing gigabytes costs disk, not memory. The
// model and the events see a head/tail preview and the output's ref
// ("sha256:…"). The package imports only the standard library.
//
// # Redaction
//
// A Redactor replaces each secret by "[REDACTED:kind]" in three passes,
// each on what the one before left:
//
//  1. secret_env: the configured secret values (4 bytes or more), as
//     literals, also as they read inside a JSON string (escaped, with and
//     without HTML escaping); where several start at one place, the
//     longest. A runtime gives it the values of secret_env, its models'
//     API keys and its API token.
//  2. Token shapes and credential assignments, unless turned off, named
//     as the secrets checker of package policy/checker names them and
//     found as it finds them (it uses MatchToken and MatchAssignment):
//     the text is read as words of the base64url alphabet (JSON escapes
//     such as \n separate words) and the shapes are tried where a word
//     starts. openai_key (sk-…, sk-proj-…), anthropic_key (sk-ant-…),
//     github_token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_),
//     aws_access_key_id (AKIA or ASIA and 16), slack_token (xoxa-,
//     xoxb-, xoxp-, xoxr-, xoxs-), google_api_key (AIza and 35),
//     stripe_key (sk_live_, rk_live_), agentrt_token (art_ and 32 or more
//     letters and digits: agentrt's API tokens), bearer_token (the
//     random-looking token after "Bearer ", any case; a token of a known
//     shape gets that shape's kind), private_key (a PEM block whose label
//     ends in PRIVATE KEY, from its BEGIN line through its END line, or
//     through its body when the END line is missing), jwt (a base64url
//     header that decodes to a JSON object naming an "alg", then the
//     payload and signature, or a JWE's four parts), and the value
//     assigned (=, :, :=, =>, quoted or not) to a name ending in
//     password, secret, token, apikey, accesskey, secretkey, privatekey or
//     signingkey when it looks random (generic_secret; aws_secret_key for
//     a 40-byte base64 value of an AWS secret access key name), unless a
//     token shape starts the value.
//  3. pattern: the matches of the configured patterns. A pattern is
//     matched against one line at a time, without its line feed, so ^
//     and $ match at the line's ends; a line longer than 64 KiB is
//     matched in 64 KiB pieces. Empty matches are ignored.
//
// Hex strings, UUIDs and ordinary words are left alone.
//
// Most text holds no secret, and most of what a runtime writes is short.
// String returns such text as it is, without allocating: text shorter
// than anything a pass could replace is returned at once, and a
// prefilter reads the rest word by word, rejecting each word by its
// length and first two bytes (a token shape), its case-folded text
// ("Bearer") or its last letters and the byte after it (an assignment).
// It says "maybe" wherever the scanner could find something, so skipping
// the scanner when it says "no" changes no result. A Redactor also
// remembers, by content, the last texts of 16 bytes to 64 KiB it found
// nothing in, since a runtime redacts one text several times on its way
// to the store. JSON redacts JSON
// text: the passes never replace across a quote, and should a
// replacement still break the document (a pattern, a value that seems to
// start inside an escape), each decoded string is redacted instead and
// the document encoded again. Redacted tells text that holds a marker.
//
// Every decision the passes take reads a bounded stretch of text, so a
// RedactWriter gives exactly what String gives for the whole text,
// however it is split into writes, and holds back only that stretch: a
// word at which nothing can start is decided as soon as it ends; one that
// may start a token shape or an assignment waits for about 2 KiB (a PEM
// block or a JWT is dropped as it streams, whatever its length, with at
// most 1 KiB of blanks held back); and the writer holds the longest
// secret value and, with patterns, the current line up to 64 KiB. The
// limits this implies are part of the definition: a key body over 512
// bytes, an assigned value over 512 bytes or more than 16 blanks from its
// operator, a JWT header over 1 KiB and a token more than 16 blanks after
// "Bearer" are not recognised, and a run of more than 1 KiB of blanks
// ends a PEM block (before the blanks) as a missing END line does.
//
// # Storage
//
// A Sink keeps the first and last Inline/2 bytes of an output in memory.
// Once the output outgrows Inline it writes everything, up to Max, to a
// temporary file in the store's directory, hashing it as it goes, and
// Close renames that file to sha256-<hex>; identical outputs share one
// file. The preview of a spilled output is its head and tail, cut at
// rune boundaries, with a line between them that says how many bytes
// were left out and names the ref. Store.Open takes only well-formed
// refs, so a ref cannot name a path outside the store.
package output
