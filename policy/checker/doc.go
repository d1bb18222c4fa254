// Package checker holds agentrt's policy checkers: the builtins
// "secrets" and "prompt_injection", and Command, which runs an external
// checker program. All implement policy.Checker and are safe for
// concurrent use. Builtin looks a builtin up by name; nothing is
// registered globally.
//
// A checker looks at one text: the raw input JSON of a call
// (policy.PhaseInput) or the tool's output (policy.PhaseOutput).
// Findings are byte ranges of that text, sorted and non-overlapping for
// the builtins, and Redact replaces them with "[REDACTED:kind]" to build
// previews that are safe to show and store.
//
// The builtins are heuristics tuned for few false positives: a flag is a
// reason for policy to ask or deny, not proof, and a miss is always
// possible. Both run in time linear in the text and allocate little when
// they find nothing.
//
// # Secrets
//
// Secrets flags credentials, with reason code secret_in_input or
// secret_in_output. It reads the text as words of the base64url alphabet
// (JSON escapes such as \n separate words) and recognises these kinds:
//
//   - openai_key: sk-… (including sk-proj-…), at least 32 characters
//     after sk- with upper and lower case letters and digits.
//   - anthropic_key: sk-ant-…, shaped the same.
//   - aws_access_key_id: AKIA or ASIA and exactly 16 upper case letters
//     or digits.
//   - aws_secret_key: a 40-character base64 value assigned to a name
//     ending in secret_access_key or aws_secret_key.
//   - github_token: ghp_, gho_, ghu_, ghs_ or ghr_ and 36 or more letters
//     and digits; github_pat_ and 50 or more.
//   - slack_token: xoxa-, xoxb-, xoxp-, xoxr- or xoxs- with a digit.
//   - google_api_key: AIza and exactly 35 base64url characters.
//   - stripe_key: sk_live_ or rk_live_ and 20 or more letters and digits.
//   - agentrt_token: art_ and 32 or more letters and digits (agentrt's own
//     API tokens).
//   - jwt: three base64url segments whose first decodes to a JSON object
//     naming an "alg", with a signature of 16 or more characters.
//   - private_key: a PEM block whose label ends in PRIVATE KEY (RSA, EC,
//     OPENSSH, ENCRYPTED, PGP … BLOCK), through its END line, or through
//     its body when the END line is missing.
//   - bearer_token: the token after "Bearer " when it looks random.
//   - generic_secret: a value assigned (=, :, :=, =>, with or without
//     quotes, as in JSON, YAML, env files, code, URLs and command-line
//     flags) to a name ending in password, passwd, secret, token, apikey,
//     accesskey, secretkey, privatekey or signingkey (case and '_' or '-'
//     ignored: API_KEY, client-secret, apiKey), when the value looks
//     random: 8 to 512 bytes without blanks, letters and digits (or both
//     cases from 20 bytes on), and a Shannon entropy of at least 2.5 bits
//     a byte (3.0 from 16 bytes on).
//
// The shapes and assignments are package output's (MatchToken and
// MatchAssignment): the runtime's Redactor removes exactly what this
// checker flags. A specific kind wins over bearer_token and generic_secret
// for the same bytes. Findings cover the secret alone, not the name it is assigned to
// or the "Bearer " before it.
//
// Secrets deliberately does not flag: UUIDs, git hashes and other hex or
// base64 strings on their own (only in a credential assignment); values
// that are references or placeholders ($VAR, ${VAR}, <token>, {{…}},
// config.apiKey, paths, URLs, and values containing "example",
// "redacted", "your", "changeme", "placeholder", "xxxx" or "****");
// short or low-entropy passwords (hunter2, changeme, Password); passwords
// with blanks in them; pagination tokens (nextPageToken, pageToken,
// continuationToken); sk_test_ keys; public keys and certificates;
// credentials in URLs (https://user:pass@host) and Basic authorization;
// and anything split across JSON escapes or encoded (base64, URL
// encoding). AWS's documented example key AKIAIOSFODNN7EXAMPLE is flagged:
// the checker judges shapes, not whether a key is live.
//
// # Prompt injection
//
// PromptInjection flags text aimed at the model rather than the user,
// with reason code prompt_injection. It is meant for tool output, where
// fetched pages, files and API responses can carry instructions; on
// input it scans the raw JSON the same way. Matching ignores ASCII case
// and takes any run of whitespace between words, as long as a phrase
// ends within 1 KiB of where it starts. Kinds:
//
//   - instruction_override: "ignore (all) (the) previous/prior/above
//     instructions", "disregard your system prompt", "forget everything
//     above", "ignore the instructions above", "new instructions:",
//     and "you are now" followed by a persona or mode (DAN, unrestricted,
//     "in developer mode", "acting as", "no longer bound").
//   - role_marker: chat template tokens (<|im_start|>, <|eot_id|>, [INST],
//     <<SYS>>, <start_of_turn>), tool protocol tags (</tool_result>,
//     <function_results>, <system-reminder>), and at the start of a line
//     "system prompt:", "### System:" style headings and Human: or
//     Assistant: turn markers.
//   - concealment: "do not tell the user", "without telling the user",
//     "keep this secret from the user".
//   - prompt_leak: "reveal/print/repeat your system prompt".
//   - exfiltration: "send/post/upload (your) API key/password/credentials/
//     .env/conversation to" a URL, an e-mail address, a domain or "me";
//     and a curl or wget line that reads a credential file (~/.ssh,
//     id_rsa, .aws/credentials, .netrc, .env, /etc/shadow …) into a
//     request through @file, -d, -F, -T, $(…), backquotes or a pipe, or
//     sends the whole environment (env | curl, $(printenv)).
//
// Advice is told apart from requests where the grammar allows: "never
// send your API key to …" is not flagged, nor are "see the instructions
// above", "ignore the previous step", "you are now logged in", "system"
// in code, "user:" in YAML, "send the token to the server" (OAuth
// documentation) or curl with $TOKEN in an Authorization header.
//
// PromptInjection deliberately does not flag, and so misses: credentials
// in environment variables sent in URLs (curl "https://…?key=$API_KEY"
// is how some official APIs take keys); phrasing outside its patterns,
// other languages, homoglyphs, zero-width characters, and encoded or
// split text; Markdown image exfiltration; and "System:" or "User:" turn
// markers, which clash with logs and YAML. It does flag documents that
// quote attacks, such as security write-ups and the source of chat
// templates: it cannot tell a quotation from a use.
//
// # External checkers
//
// Command runs a program per check with the policy.CheckInput as JSON on
// stdin; the program writes one policy.CheckResult as JSON on stdout and
// exits 0. See Command for the contract.
package checker
