package output

import "strings"

// Token is a token shape found in a text t: t[Start:End], named Kind
// (a kind of Counts, such as "openai_key", "jwt" or "bearer_token").
type Token struct {
	Kind       string
	Start, End int
}

// MatchToken matches the token shapes at the word s[i:we], a run of the
// base64url alphabet (the caller reads text as words of it, JSON escapes
// such as \n separating words: see SkipEscape): a prefixed key, a JWT or a PEM private key block, or, when
// the word is "Bearer" (any case), a bearer token after it that looks
// random (bearer_token; a key shape there is matched at its own word). It
// returns the token, whose End is 0 when there is none.
//
// MatchToken sees the whole text s, and finds what a whole text shows
// rather than what a Redactor must decide on a stream: it takes a JWT
// only with its signature, through its last part, does not cut a PEM
// block at a long run of blanks, and allows any blanks after "Bearer".
func MatchToken(s string, i, we int) Token {
	// Cheap tests of the word's first byte and length, inlined, keep most
	// words away from the matchers.
	if we-i < int(minMatchWord[s[i]]) {
		return Token{}
	}
	return matchWordAt(s, i, we)
}

// minMatchWord holds, by a word's first byte, the shortest word
// MatchToken may match there (255 for none).
var minMatchWord = func() (m [256]uint8) {
	for c := range m {
		switch {
		case tokenStarts[c]:
			m[c] = minTokenWord
		case c|0x20 == 'b':
			m[c] = uint8(len("bearer"))
		default:
			m[c] = 255
		}
	}
	return m
}()

// matchWordAt is MatchToken at the word s[i:we].
func matchWordAt(s string, i, we int) Token {
	if tokenStarts[s[i]] && we-i >= minTokenWord {
		if end, kind := matchTokenAt(s, i, we); end > i {
			return Token{Kind: kind, Start: i, End: end}
		}
	}
	if we-i == len("bearer") && s[i]|0x20 == 'b' && strings.EqualFold(s[i:we], "bearer") {
		if vs := bearerValue(s, we); vs >= 0 {
			if ve := bearerEnd(s, vs); ve >= 0 {
				return Token{Kind: kindBearer, Start: vs, End: ve}
			}
		}
	}
	return Token{}
}

// matchTokenAt matches the prefixed key shapes, JWTs and PEM private key
// blocks at the word s[i:we] of the whole text s. It returns the end of
// the token and its kind, or -1.
func matchTokenAt(s string, i, we int) (int, string) {
	if end, kind := matchKey(s[i:]); end > 0 {
		return i + end, kind
	}
	switch s[i] {
	case 'e':
		return wholeJWT(s, i, we), kindJWT
	case '-':
		return wholePEM(s, i), kindPrivateKey
	}
	return -1, ""
}

// minJWTSignature is the shortest signature wholeJWT takes: an unsigned
// token (alg none, with an empty signature) carries no credential.
const minJWTSignature = 16

// wholeJWT matches a JWT at the word s[i:we]: header.payload.signature,
// each part base64url, the header a JSON object naming an "alg", the
// signature at least minJWTSignature bytes; a JWE's further parts are
// part of it. It returns the end of the token, or -1.
func wholeJWT(s string, i, we int) int {
	if we >= len(s) || s[we] != '.' {
		return -1
	}
	pe := span(s, we+1, wordBytes)
	if pe-(we+1) < 2 || pe >= len(s) || s[pe] != '.' || span(s, pe+1, wordBytes)-(pe+1) < minJWTSignature {
		return -1
	}
	ok, jwe := jwtHeader(s[i:we])
	if !ok {
		return -1
	}
	sc := shapeScanner{mode: modeJWT, parts: jwtParts(jwe)}
	end, _ := sc.jwtBody(s, we+1, true)
	return end
}

// wholePEM matches a PEM private key block at s[i], from its BEGIN line
// through its END line or, when it is cut short, through the end of its
// body. It returns the end of the block, or -1.
func wholePEM(s string, i int) int {
	end, label := pemBeginLine(s[i:])
	if end < 0 {
		return -1
	}
	sc := shapeScanner{mode: modePEM, label: label, wholeText: true}
	end, _ = sc.pemBody(s, i+end, true)
	return end
}
