package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
)

// SignatureAlgorithm is the only signature algorithm of the format.
const SignatureAlgorithm = "ed25519"

// Signature is signature.json: an ed25519 signature over the exact bytes
// of manifest.json. Since the manifest holds the hash of every other
// member, it signs the whole bundle.
type Signature struct {
	Algorithm string `json:"algorithm"`
	// KeyID is "sha256:" and the hex SHA-256 of the public key's DER
	// SubjectPublicKeyInfo (openssl pkey -pubin -outform DER | sha256sum).
	KeyID string `json:"keyId"`
	// PublicKey is the signer's public key, PEM SubjectPublicKeyInfo. It
	// lets anyone check the bundle is intact; who signed it takes
	// verifying with a key one already trusts.
	PublicKey string `json:"publicKey"`
	// Signed names the member signed: manifest.json.
	Signed    string `json:"signed"`
	Signature string `json:"signature"` // standard base64
}

// ParsePrivateKeyPEM reads an ed25519 private key from PEM PKCS#8 (what
// openssl genpkey -algorithm ed25519 writes).
func ParsePrivateKeyPEM(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("parsing the private key: want a PEM \"PRIVATE KEY\" block (PKCS#8)")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the private key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("parsing the private key: a %T, not an ed25519 key", k)
	}
	return priv, nil
}

// ParsePublicKeyPEM reads an ed25519 public key from PEM
// SubjectPublicKeyInfo (openssl pkey -pubout).
func ParsePublicKeyPEM(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("parsing the public key: want a PEM \"PUBLIC KEY\" block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("parsing the public key: a %T, not an ed25519 key", k)
	}
	return pub, nil
}

// MarshalPublicKeyPEM encodes pub as PEM SubjectPublicKeyInfo.
func MarshalPublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// KeyID is a public key's id: "sha256:" and the hex SHA-256 of its DER
// SubjectPublicKeyInfo.
func KeyID(pub ed25519.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Sign copies the bundle read from in to out, adding signature.json (the
// last member) signed with key and replacing any signature it had. The
// manifest and every other member are copied unchanged. It checks the
// bundle as it copies, as Verify does, and returns a *BrokenError (and
// leaves out incomplete) when it is broken: write to a temporary file and
// keep it only when Sign succeeds.
func Sign(in io.Reader, out io.Writer, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return errors.New("signing: not an ed25519 private key")
	}
	v := &verifier{opts: &VerifyOptions{}, signing: true, out: out}
	v.lim = v.opts.Limits.withDefaults()
	v.run(in)
	if v.broken {
		return &BrokenError{Member: v.rep.Broken, Reason: v.rep.Reason}
	}
	pub := key.Public().(ed25519.PublicKey)
	pubPEM, err := MarshalPublicKeyPEM(pub)
	if err != nil {
		return err
	}
	id, err := KeyID(pub)
	if err != nil {
		return err
	}
	sig := Signature{
		Algorithm: SignatureAlgorithm, KeyID: id, PublicKey: string(pubPEM), Signed: ManifestName,
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, v.manifestRaw)),
	}
	data, err := json.MarshalIndent(sig, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the signature: %w", err)
	}
	data = append(data, '\n')
	if err := v.aw.add(SignatureName, int64(len(data)), bytes.NewReader(data)); err != nil {
		return err
	}
	return v.aw.close()
}

// checkSignature checks signature.json against manifest.json.
func (v *verifier) checkSignature() {
	if v.manifestRaw == nil {
		return
	}
	if v.signature == nil {
		if v.opts.PublicKey != nil {
			v.fail(SignatureName, MemberMissing, 0, "the bundle is not signed, and a public key was given")
		}
		return
	}
	bad := func(format string, args ...any) {
		v.rep.Signature = SignatureInvalid
		v.fail(SignatureName, MemberInvalid, int64(len(v.signature)), format, args...)
	}
	var s Signature
	if err := json.Unmarshal(v.signature, &s); err != nil {
		bad("decoding: %v", err)
		return
	}
	if s.Algorithm != SignatureAlgorithm || s.Signed != ManifestName {
		bad("algorithm %q over %q, want %s over %s", s.Algorithm, s.Signed, SignatureAlgorithm, ManifestName)
		return
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		bad("decoding the signature: %v", err)
		return
	}
	v.rep.KeyID = s.KeyID
	if v.opts.PublicKey != nil {
		if !ed25519.Verify(v.opts.PublicKey, v.manifestRaw, sig) {
			bad("the signature over %s does not verify with the given public key", ManifestName)
			return
		}
		v.rep.Signature = SignatureValid
		v.rep.KeyID, _ = KeyID(v.opts.PublicKey)
		v.rep.Members = append(v.rep.Members, MemberResult{Name: SignatureName, Status: MemberOK, Bytes: int64(len(v.signature))})
		return
	}
	pub, err := ParsePublicKeyPEM([]byte(s.PublicKey))
	if err != nil {
		bad("%v", err)
		return
	}
	if id, err := KeyID(pub); err != nil || id != s.KeyID {
		bad("keyId %s is not the id of the public key it carries", s.KeyID)
		return
	}
	if !ed25519.Verify(pub, v.manifestRaw, sig) {
		bad("the signature over %s does not verify with the public key it carries", ManifestName)
		return
	}
	v.rep.Signature = SignatureUnchecked
	v.rep.Members = append(v.rep.Members, MemberResult{Name: SignatureName, Status: MemberOK, Bytes: int64(len(v.signature))})
}
