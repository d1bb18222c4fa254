package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
)

func newExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export evidence bundles",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newExportRequestCmd())
	return cmd
}

type exportFlags struct {
	storeFlags
	session, request string
	artifacts        bool
	health           bool
	signKey          string
	output           string
	json             bool
}

func newExportRequestCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "request --session ID --request ID -o FILE [--artifact-contents] [--health] [--sign-key FILE] [--json]",
		Short: "Export one request's evidence bundle (.tar.gz)",
		Long: `Write the evidence bundle of one request (turn) to FILE: a .tar.gz whose manifest lists the
size and SHA-256 of every member — the request, its events, the session and thread snapshots,
policy decisions, approvals, tool calls with their input and output refs, the session's
receipt chain and the provider raw-response refs. --artifact-contents adds the tool inputs,
outputs and raw responses themselves; --health the runtime's health. The export is recorded
in the session as evidence.changed. docs/evidence.md describes the bundle.

--sign-key signs the bundle's manifest with an ed25519 private key in PEM PKCS#8 (openssl
genpkey -algorithm ed25519 -out key.pem); check it with agentrt verify --public-key.

The bundle is written to a temporary file next to FILE and renamed over it when complete.

Exit codes: 0 exported, 1 no such request or an operational error, 2 usage or configuration
error.`,
		Example: `  agentrt export request --session ses_01M7Z6E98T14HZ9P6EVS3DAV33 --request turn_01M7Z6E98T14HZ9P6EVS3DAV36 \
      --artifact-contents --health -o case.tar.gz
  agentrt verify case.tar.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd) },
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the request's session (required)")
	fl.StringVar(&f.request, "request", "", "the request (turn) to export (required)")
	fl.BoolVar(&f.artifacts, "artifact-contents", false, "include tool input and output contents and provider raw responses")
	fl.BoolVar(&f.health, "health", false, "include the runtime's health snapshot")
	fl.StringVar(&f.signKey, "sign-key", "", "sign the manifest with this ed25519 private key (PEM PKCS#8)")
	fl.StringVarP(&f.output, "output", "o", "", "the bundle file to write (required)")
	fl.BoolVar(&f.json, "json", false, "print a summary of the manifest as JSON")
	return cmd
}

// exportSummary is what export --json prints.
type exportSummary struct {
	EvidenceID     string                     `json:"evidenceId"`
	File           string                     `json:"file"`
	Bytes          int64                      `json:"bytes"`
	ManifestSHA256 string                     `json:"manifestSha256"`
	SessionID      string                     `json:"sessionId"`
	TurnID         string                     `json:"turnId"`
	TimeRange      evidence.TimeRange         `json:"timeRange"`
	Counts         evidence.Counts            `json:"counts"`
	Signals        map[string]evidence.Signal `json:"signals"`
	KnownGaps      []string                   `json:"knownGaps"`
	Signed         bool                       `json:"signed"`
	KeyID          string                     `json:"keyId,omitempty"`
}

func (f *exportFlags) run(cmd *cobra.Command) error {
	switch {
	case f.session == "":
		return usageErr("--session is required")
	case f.request == "":
		return usageErr("--request is required")
	case f.output == "":
		return usageErr("-o FILE is required")
	}
	var key ed25519.PrivateKey
	if f.signKey != "" {
		pem, err := os.ReadFile(f.signKey)
		if err != nil {
			return usageErr("reading --sign-key: %v", err)
		}
		if key, err = evidence.ParsePrivateKeyPEM(pem); err != nil {
			return usageErr("--sign-key %s: %v", f.signKey, err)
		}
	}
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	progress := io.Discard
	if fi, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(fi) {
		progress = fi
	}
	sum, err := exportRequest(commandContext(cmd), b, &apitype.ExportEvidenceParams{
		SessionID: f.session, TurnID: f.request, ArtifactContents: f.artifacts, Health: f.health,
	}, f.output, key, progress)
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return &exitError{code: ExitFailed, err: fmt.Errorf("no request %s in session %s", f.request, f.session)}
	case err != nil:
		return runtimeErr(err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	c := sum.Counts
	fmt.Fprintf(out, "exported request %s to %s (evidence %s): %d events, %d decisions, %d approvals, %d tool calls, %d receipts, %d artifacts\n",
		sum.TurnID, sum.File, sum.EvidenceID, c.Events, c.Decisions, c.Approvals, c.ToolCalls, c.Receipts, c.Artifacts)
	if sum.Signed {
		fmt.Fprintf(out, "signed with key %s\n", sum.KeyID)
	}
	if len(sum.KnownGaps) > 0 {
		for _, g := range sum.KnownGaps {
			fmt.Fprintf(out, "not exported: %s: %s\n", g, sum.Signals[g].Reason)
		}
	}
	return nil
}

// errSignStopped is what the export sees when signing stopped reading
// its stream: Sign's own error is the one to report then.
var errSignStopped = errors.New("signing stopped")

// exportRequest writes a request's bundle to path, signed with key when
// it is not nil: to a temporary file in path's directory, renamed over
// path once complete. The written file is then verified, which also
// reads back its manifest for the summary. Progress goes to progress.
func exportRequest(ctx context.Context, b backend, p *apitype.ExportEvidenceParams, path string, key ed25519.PrivateKey, progress io.Writer) (*exportSummary, error) {
	fmt.Fprintf(progress, "exporting request %s from %s… ", p.TurnID, b.Where())
	n, err := writeAtomically(path, func(w io.Writer) error {
		if key == nil {
			return b.ExportBundle(ctx, w, p)
		}
		// The bundle streams through Sign. When the export fails, Sign
		// sees a broken stream: the export's own error (an unknown
		// request, a refused token) is the one to report.
		pr, pw := io.Pipe()
		exported := make(chan error, 1)
		go func() {
			err := b.ExportBundle(ctx, pw, p)
			pw.CloseWithError(err)
			exported <- err
		}()
		err := evidence.Sign(pr, w, key)
		pr.CloseWithError(errSignStopped) // unblocks the export when Sign stopped early
		if xerr := <-exported; xerr != nil && !errors.Is(xerr, errSignStopped) {
			return xerr
		}
		return err
	})
	if err != nil {
		fmt.Fprintln(progress)
		return nil, err
	}
	fmt.Fprintf(progress, "%s written; verifying… ", byteSize(n))
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the bundle back: %w", err)
	}
	defer file.Close()
	rep := evidence.Verify(file, nil)
	if !rep.OK || rep.Manifest == nil || len(rep.Members) == 0 {
		fmt.Fprintln(progress)
		return nil, fmt.Errorf("the bundle written to %s does not verify: %s: %s", path, rep.Broken, rep.Reason)
	}
	m := rep.Manifest
	fmt.Fprintf(progress, "ok: %d events, %d artifacts\n", m.Counts.Events, m.Counts.Artifacts)
	sum := &exportSummary{
		EvidenceID: m.BundleID, File: path, Bytes: n, ManifestSHA256: rep.Members[0].SHA256, SessionID: m.SessionID, TurnID: m.TurnID,
		TimeRange: m.TimeRange, Counts: m.Counts, Signals: m.Signals, KnownGaps: m.KnownGaps,
	}
	if key != nil {
		sum.Signed = true
		sum.KeyID, _ = evidence.KeyID(key.Public().(ed25519.PublicKey))
	}
	return sum, nil
}

// writeAtomically writes path through a temporary file in its directory,
// synced and renamed over path only when write succeeds. It returns the
// bytes written. The file is private to its owner (0600): a bundle, or
// an output, may hold tool inputs and outputs.
func writeAtomically(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		tmp.Close()
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return fi.Size(), nil
}
