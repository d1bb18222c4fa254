package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds agentrt outputs (alias blobs): the stored content an
// event names by ref — a tool's whole output (outputRef), a raw model
// response (refs.rawResponse), a rewritten tool input (updatedInputRef).

func newOutputsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "outputs",
		Aliases: []string{"blobs"},
		Short:   "Fetch stored outputs by their ref (sha256:…)",
		Long: `Events carry previews; whole data is stored and named by a ref ("sha256:" and 64 hex
digits): a tool's output larger than its 2 KiB preview (the event's outputRef; a blob in the
store, or spilled to the data directory's outputs/ when larger than the inline limit), a raw
model response (model.completed refs.rawResponse), a tool input a hook rewrote
(updatedInputRef). These commands fetch it from the config's data directory, or from a
daemon with --server (GET /v1/outputs/{ref}). "blobs" is another name for "outputs".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newOutputsGetCmd())
	return cmd
}

type outputsGetFlags struct {
	storeFlags
	output string
}

func newOutputsGetCmd() *cobra.Command {
	var f outputsGetFlags
	cmd := &cobra.Command{
		Use:   "get REF [-o FILE]",
		Short: "Write a stored output to standard output or a file",
		Long: `Write the content a ref names, byte for byte, to standard output, or with -o to FILE (mode
0600, through a temporary file renamed over it when complete). Only the tenant's own content
is served: with --server, the token's tenant; on a data directory, the default tenant. A
ref of another tenant's answers as one of nothing does.

Exit codes: 0 written, 1 no such output (or it is no longer stored) or the store or server
could not be read, 2 usage or configuration error (a malformed ref).`,
		Example: `  agentrt outputs get sha256:03c9e653fbebf32a2e458552ee50b1b2e76d8fd0538ea7da8653aad357cc90b2 --config agentrt.yaml | less
  agentrt blobs get sha256:03c9e653… --server http://127.0.0.1:7420 -o build.log`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := oneID(cmd, args, "REF")
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			out, err := b.OpenOutput(commandContext(cmd), runtype.Owner{}, ref)
			switch {
			case errors.Is(err, apitype.ErrNotFound):
				return &exitError{code: ExitFailed, err: fmt.Errorf("no output %s in %s (or it is another tenant's, or no longer stored)", ref, b.Where())}
			case err != nil:
				return runtimeErr(err)
			}
			defer out.Close()
			if f.output == "" {
				if _, err := io.Copy(cmd.OutOrStdout(), out); err != nil {
					return &exitError{code: ExitFailed, err: fmt.Errorf("reading output %s: %w", ref, err)}
				}
				return nil
			}
			n, err := writeAtomically(f.output, func(w io.Writer) error {
				_, err := io.Copy(w, out)
				return err
			})
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("output %s: %w", ref, err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s, %s) to %s\n", ref, byteSize(n), out.MediaType, f.output)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write to this file instead of standard output")
	return cmd
}
