package cli

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/runtype"
)

type verifyFlags struct {
	storeFlags
	session   string
	publicKey string
	json      bool
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify (BUNDLE.tar.gz [--public-key FILE] | --session ID [--config FILE]) [--json]",
		Short: "Check an evidence bundle, or a session's evidence receipts",
		Long: `With a bundle (from agentrt export request): check it without extracting anything. Every
member's size and SHA-256 must be the manifest's, none missing, none extra, none twice, no
unsafe names; the receipt chain in receipts.jsonl must be unbroken from the session's first
receipt, and every sealed event in events.jsonl what its receipt sealed. A signed bundle's
signature must verify: with --public-key (PEM, openssl pkey -pubout) against that key, which
then must have signed it; without, only against the key it carries (reported as unchecked).
The first broken member is named.

With --session: check the hash chain of a session's evidence receipts in the store: every
receipt's hash covers its body and its predecessor's hash, the sequence has no gaps, and every
sealed event (policy decisions, approvals, tool results) still reads back as its receipt
recorded it.

Exit codes: 0 verified, 1 a member or receipt is broken (the first one found is named) or the
session does not exist, 2 usage or configuration error.`,
		Example: `  agentrt verify case.tar.gz --public-key signer.pub
  agentrt verify --config agentrt.yaml --session ses_01M7Z6E98T14HZ9P6EVS3DAV33`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && f.session != "":
				return usageErr("give a bundle or --session, not both")
			case len(args) == 1:
				return f.verifyBundle(cmd, args[0])
			case f.publicKey != "":
				return usageErr("--public-key checks a bundle: give the bundle file")
			case f.session == "":
				return usageErr("--session is required (or give a bundle file)")
			}
			return f.verifySession(cmd)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.session, "session", "", "the session whose receipts to verify")
	cmd.Flags().StringVar(&f.publicKey, "public-key", "", "the ed25519 public key (PEM) the bundle must be signed with")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON")
	return cmd
}

func (f *verifyFlags) verifySession(cmd *cobra.Command) error {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	res, err := b.VerifySession(commandContext(cmd), runtype.Owner{}, f.session)
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return &exitError{code: ExitFailed, err: fmt.Errorf("no session %s", f.session)}
	case err != nil:
		return runtimeErr(err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		if err := printJSON(out, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, verifyLine(res))
	}
	if !res.OK {
		return &exitError{code: ExitFailed, err: errors.New("")}
	}
	return nil
}

func (f *verifyFlags) verifyBundle(cmd *cobra.Command, path string) error {
	var pub ed25519.PublicKey
	if f.publicKey != "" {
		pem, err := os.ReadFile(f.publicKey)
		if err != nil {
			return usageErr("reading --public-key: %v", err)
		}
		if pub, err = evidence.ParsePublicKeyPEM(pem); err != nil {
			return usageErr("--public-key %s: %v", f.publicKey, err)
		}
	}
	file, err := os.Open(path)
	if err != nil {
		return usageErr("opening the bundle: %v", err)
	}
	defer file.Close()
	rep := evidence.Verify(file, &evidence.VerifyOptions{PublicKey: pub})
	out := cmd.OutOrStdout()
	if f.json {
		if err := printJSON(out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, bundleLine(path, rep))
	}
	if !rep.OK {
		return &exitError{code: ExitFailed, err: errors.New("")}
	}
	return nil
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// bundleLine says what Verify found of a bundle, in one line.
func bundleLine(path string, rep *evidence.Report) string {
	switch {
	case !rep.OK && rep.Broken == "":
		return fmt.Sprintf("%s: broken: %s", path, rep.Reason)
	case !rep.OK:
		return fmt.Sprintf("%s: broken: %s: %s", path, rep.Broken, rep.Reason)
	}
	sig := "unsigned"
	switch rep.Signature {
	case evidence.SignatureValid:
		sig = "signature valid (key " + rep.KeyID + ")"
	case evidence.SignatureUnchecked:
		sig = "signed by key " + rep.KeyID + ", not checked against a trusted key (give --public-key)"
	}
	head := ""
	if rep.ReceiptHead != "" {
		head = " (head " + rep.ReceiptHead + ")"
	}
	return fmt.Sprintf("%s: ok: evidence %s, %d members, %d receipts%s, %s", path, rep.BundleID, len(rep.Members), rep.Receipts, head, sig)
}

// verifyLine says what VerifySession found, in one line.
func verifyLine(res *apitype.VerifyResult) string {
	switch {
	case res.OK && res.Receipts == 0:
		return fmt.Sprintf("session %s: no receipts", res.SessionID)
	case res.OK:
		return fmt.Sprintf("session %s: %d receipts, chain ok (head %s)", res.SessionID, res.Receipts, res.Head)
	case res.Seq == 0:
		return fmt.Sprintf("session %s: event %s: %s", res.SessionID, res.EventID, res.Problem)
	}
	return fmt.Sprintf("session %s: receipt %d (event %s): %s", res.SessionID, res.Seq, res.EventID, res.Problem)
}
