package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
)

// maxCaseBytes bounds a replay case read from a file or bundle.
const maxCaseBytes = 64 << 20

type replayFlags struct {
	storeFlags
	session   string
	request   string
	noTools   bool
	workspace string
	writeCase string
	json      bool
	// publicKey checks a bundle's signature; trustCase trusts a file's
	// case anyway (its recorded answers, policy mode and principal). untrusted is set when the
	// case's recorded answers must not be applied.
	publicKey string
	trustCase bool
	untrusted bool
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay [BUNDLE.tar.gz [--public-key FILE] | CASE.json | --request ID [--session ID] [--server URL]] [--config FILE] [--no-tools] [--json]",
		Short: "Re-run a recorded request under today's policy and tools and show what decides differently",
		Long: `Re-run a recorded request with the model outputs it recorded, under the configuration's
agents, policy, hooks and tools as they are today, and compare every step (tool call) with
the recording: its permission decision (allow, deny, ask, with the deciding rules) and its
result. A regression test for policy changes. See docs/replay.md.

The request comes from the config's data directory (--request, with --session to check it
belongs to that session), from a daemon (--server with --request and --session: the case
comes as an export of the request, which the daemon records as evidence.changed), from an
evidence bundle (its replay-case.json member) or from a
replay case JSON file. The replay runs in a scratch runtime in this process that writes
nothing to the data directory; an ask is answered with the recorded answer, or denied when there is none.
A bundle must verify (as agentrt verify checks it) before its case is used. The recorded
answers of a case from a file are applied only when the bundle's signature verifies with
--public-key (or with --trust-case): otherwise every ask is denied and the case's
policy mode and principal are ignored, so that a crafted file cannot approve or widen
the calls it replays.

Replay EXECUTES TOOLS: commands, file and process tools run for real, in a scratch copy of
the agent's workspace (or in --workspace). --no-tools runs none and compares decisions only.

Exit codes: 0 nothing differs, 1 something differs, the request is unknown (or not of
--session), or the replay could not run; 2 usage or configuration error or an unreadable
bundle or case.`,
		Example: `  agentrt replay --config agentrt.yaml --request turn_01M7Z6E98T14HZ9P6EVS3DAV33
  agentrt replay --config agentrt.yaml case.tar.gz --no-tools
  agentrt replay --config agentrt.yaml --request turn_01M7Z6E98T14HZ9P6EVS3DAV33 --write-case case.json
  agentrt replay --config agentrt.yaml case.json --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.replayCase(cmd, args)
			if err != nil {
				return err
			}
			if f.writeCase != "" {
				if err := writeCase(f.writeCase, c); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			}
			cfg, err := f.loadConfig(cmd)
			if err != nil {
				return err
			}
			res, err := agentrt.Replay(commandContext(cmd), cfg, c, agentrt.ReplayOptions{NoTools: f.noTools, Workspace: f.workspace, Untrusted: f.untrusted})
			switch {
			case errors.Is(err, apitype.ErrUnknownAgent), errors.Is(err, replaycase.ErrInvalid):
				return usageErr("%v", err)
			case err != nil:
				return &exitError{code: ExitFailed, err: fmt.Errorf("replaying: %w", err)}
			}
			out := cmd.OutOrStdout()
			if f.json {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				if err := enc.Encode(res.Diff); err != nil {
					return err
				}
			} else {
				printDiff(out, res.Diff, colourful(out))
			}
			if res.Diff.Summary.Differs {
				return &exitError{code: ExitFailed, err: errors.New("")}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.request, "request", "", "the stored request (turn id) to replay")
	cmd.Flags().StringVar(&f.session, "session", "", "the session the request belongs to (checked when given)")
	cmd.Flags().BoolVar(&f.noTools, "no-tools", false, "run no tools: compare decisions only")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "run the tools in this directory instead of a scratch copy of the agent's workspace")
	cmd.Flags().StringVar(&f.writeCase, "write-case", "", "also write the recorded case as JSON to this file (to replay it later, or in CI)")
	cmd.Flags().StringVar(&f.publicKey, "public-key", "", "the ed25519 public key (PEM) the bundle must be signed with; its recorded answers are then applied")
	cmd.Flags().BoolVar(&f.trustCase, "trust-case", false, "trust a case file or a bundle not verified with --public-key: apply its recorded answers, policy mode and principal")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the diff as JSON")
	return cmd
}

// replayCase reads the case to replay: from the file argument, or from
// the data directory.
func (f *replayFlags) replayCase(cmd *cobra.Command, args []string) (*replaycase.Case, error) {
	switch {
	case len(args) == 1 && (f.request != "" || f.session != ""):
		return nil, usageErr("give a bundle or case file, or --request, not both")
	case len(args) == 1:
		var pub ed25519.PublicKey
		if f.publicKey != "" {
			pem, err := os.ReadFile(f.publicKey)
			if err != nil {
				return nil, usageErr("reading --public-key: %v", err)
			}
			if pub, err = evidence.ParsePublicKeyPEM(pem); err != nil {
				return nil, usageErr("--public-key %s: %v", f.publicKey, err)
			}
		}
		cf, err := readCaseFile(args[0], pub)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		f.untrusted = !cf.trusted && !f.trustCase
		return cf.c, nil
	case f.publicKey != "":
		return nil, usageErr("--public-key checks a bundle: give the bundle file")
	case f.request == "":
		return nil, usageErr("give a bundle or case file to replay, or --request (see agentrt replay --help)")
	}
	if serverURL(cmd) != "" {
		return f.remoteCase(cmd)
	}
	rt, stop, err := f.openReader(cmd)
	if err != nil {
		return nil, err
	}
	defer stop()
	c, err := rt.ReplayCase(commandContext(cmd), runtype.Owner{}, f.session, f.request)
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		// An unknown request fails, as in export request and tasks.
		return nil, &exitError{code: ExitFailed, err: err}
	case err != nil:
		return nil, runtimeErr(err)
	}
	return c, nil
}

// remoteCase reads a stored request's case from the daemon at --server:
// it exports the request's bundle with its contents (which records
// evidence.changed there) and reads the bundle's replay case. The daemon
// is authenticated by its token, so the case's recorded answers are
// trusted like the data directory's.
func (f *replayFlags) remoteCase(cmd *cobra.Command) (*replaycase.Case, error) {
	if f.session == "" {
		return nil, usageErr("--session is required with --server")
	}
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return nil, err
	}
	defer stop()
	tmp, err := os.CreateTemp("", "agentrt-replay-*.tar.gz")
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("creating a scratch file: %w", err)}
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	err = b.ExportBundle(commandContext(cmd), tmp, &apitype.ExportEvidenceParams{SessionID: f.session, TurnID: f.request, ArtifactContents: true})
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("no request %s in session %s", f.request, f.session)}
	case err != nil:
		return nil, runtimeErr(err)
	}
	cf, err := readCaseFile(tmp.Name(), nil)
	switch {
	case errors.Is(err, errNoCase):
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("request %s recorded no model output to replay", f.request)}
	case err != nil:
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("reading the daemon's bundle: %w", err)}
	}
	return cf.c, nil
}

// writeCase writes c as indented JSON to name.
func writeCase(name string, c *replaycase.Case) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the replay case: %w", err)
	}
	if err := os.WriteFile(name, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the replay case: %w", err)
	}
	return nil
}

// errNoCase: a bundle holds no replay case.
var errNoCase = errors.New("no replay case")

// caseFile is a replay case read from a file, and whether its recorded
// answers may be trusted.
type caseFile struct {
	c *replaycase.Case
	// trusted: a bundle whose signature verified with the given public
	// key.
	trusted bool
}

// readCaseFile reads a replay case from an evidence bundle (its
// replay-case.json member, once the whole bundle verifies, and its
// signature with pub when given) or from a JSON file.
func readCaseFile(name string, pub ed25519.PublicKey) (*caseFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if magic != [2]byte{0x1f, 0x8b} {
		if pub != nil {
			return nil, fmt.Errorf("%s is a case file, not a bundle: --public-key checks a signed bundle", name)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxCaseBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if len(data) > maxCaseBytes {
			return nil, fmt.Errorf("%s is larger than %d MiB", name, maxCaseBytes>>20)
		}
		c, err := replaycase.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &caseFile{c: c}, nil
	}
	// The bundle must verify before anything in it is used, and what is
	// used must be what verified: both passes read a private copy, which
	// no one can rewrite in between (the file given may be in a shared
	// directory).
	cp, err := os.CreateTemp("", "agentrt-replay-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("copying %s: %w", name, err)
	}
	defer os.Remove(cp.Name())
	defer cp.Close()
	if _, err := io.Copy(cp, f); err != nil {
		return nil, fmt.Errorf("copying %s: %w", name, err)
	}
	if _, err := cp.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	f = cp
	rep := evidence.Verify(f, &evidence.VerifyOptions{PublicKey: pub})
	if !rep.OK {
		if rep.Broken == "" {
			return nil, fmt.Errorf("bundle %s does not verify: %s", name, rep.Reason)
		}
		return nil, fmt.Errorf("bundle %s does not verify: %s: %s", name, rep.Broken, rep.Reason)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading bundle %s: %w", name, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("bundle %s has no %s (export it with --artifact-contents to include the replay case): %w", name, evidence.ReplayCaseName, errNoCase)
		case err != nil:
			return nil, fmt.Errorf("reading bundle %s: %w", name, err)
		}
		if h.Name != evidence.ReplayCaseName {
			continue
		}
		member, err := io.ReadAll(io.LimitReader(tr, maxCaseBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s from bundle %s: %w", h.Name, name, err)
		}
		if len(member) > maxCaseBytes {
			return nil, fmt.Errorf("%s in bundle %s is larger than %d MiB", h.Name, name, maxCaseBytes>>20)
		}
		c, err := replaycase.Parse(member)
		if err != nil {
			return nil, fmt.Errorf("%s in bundle %s: %w", h.Name, name, err)
		}
		return &caseFile{c: c, trusted: pub != nil && rep.Signature == evidence.SignatureValid}, nil
	}
}

// colourful reports whether w is a terminal that takes colour.
func colourful(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// ANSI colours of the diff table.
const (
	ansiChanged = "\x1b[1;31m"
	ansiReset   = "\x1b[0m"
)

// printDiff prints a diff for people: a header, one line per step (a
// changed one marked with * and, on a terminal, in red), its notes, the
// differences that are not one step's, and a summary line.
func printDiff(w io.Writer, d *replaycase.Diff, colour bool) {
	fmt.Fprintf(w, "replay of request %s (session %s, agent %s)\n", d.TurnID, d.SessionID, d.Agent)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\t#\tTOOL\tDECISION (recorded → replayed)\tRESULT (recorded → replayed)\tCHANGED")
	for _, s := range d.Steps {
		mark := " "
		if len(s.Changed) > 0 {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", mark, s.Index, s.Tool,
			pair(decisionCell(s.Recorded), decisionCell(s.Replayed)),
			pair(resultCell(s.Recorded, true), resultCell(s.Replayed, d.Summary.ResultsCompared)),
			strings.Join(s.Changed, ", "))
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	fmt.Fprintln(w, lines[0])
	for i, s := range d.Steps {
		line := lines[i+1]
		if colour && len(s.Changed) > 0 {
			line = ansiChanged + line + ansiReset
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		for _, n := range s.Notes {
			fmt.Fprintf(w, "      note: %s\n", n)
		}
	}
	for _, x := range d.Differences {
		line := "* " + x.Message
		if colour {
			line = ansiChanged + line + ansiReset
		}
		fmt.Fprintln(w, line)
	}
	sum := d.Summary
	verdict := "no differences"
	if sum.Differs {
		verdict = fmt.Sprintf("%d steps changed", sum.Changed)
		if sum.Changed == 1 {
			verdict = "1 step changed"
		}
		switch n := len(d.Differences); n {
		case 0:
		case 1:
			verdict += ", 1 other difference"
		default:
			verdict += fmt.Sprintf(", %d other differences", n)
		}
	}
	results := ""
	if !sum.ResultsCompared {
		results = " (decisions only: --no-tools)"
	}
	fmt.Fprintf(w, "%d steps compared%s; %d/%d model outputs used; %s\n",
		sum.StepsCompared, results, sum.ModelOutputsReplayed, sum.ModelOutputsRecorded, verdict)
}

// pair shows a recorded and a replayed value: once when they are equal.
func pair(rec, rep string) string {
	if rec == rep {
		return rec
	}
	return rec + " → " + rep
}

// decisionCell shows a decision with its rules and a person's answer.
func decisionCell(o *replaycase.Outcome) string {
	if o == nil {
		return "(no call)"
	}
	s := o.Decision
	if s == "" {
		s = "not evaluated"
	}
	if len(o.RuleIDs) > 0 {
		s += " (" + strings.Join(o.RuleIDs, ",") + ")"
	}
	if o.Human != "" {
		s += ": " + o.Human
	}
	return s
}

// resultCell shows a result's status and the start of its hash.
func resultCell(o *replaycase.Outcome, compared bool) string {
	switch {
	case o == nil:
		return "(no call)"
	case !compared:
		return "not compared"
	case o.ResultStatus == "":
		return "no result"
	}
	s := o.ResultStatus
	if o.FailureKind != "" {
		s += " (" + o.FailureKind + ")"
	}
	if len(o.ResultSHA256) >= 8 {
		s += " " + o.ResultSHA256[:8]
	}
	return s
}
