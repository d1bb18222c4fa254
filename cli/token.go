package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds agentrt token: the HTTP API's tokens, each bound to a
// tenant, a principal and a role. The commands work on the config's data
// directory (a daemon serving it sees the change on its next request),
// or on a daemon with --server and an admin's token. A new token is
// printed once; the store keeps only its hash.

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list, rotate and revoke the HTTP API's tokens",
		Long: `Every request to the HTTP API (agentrt serve) carries a bearer token, bound to a tenant, a
principal and a role: admin (everything, every tenant's health and metrics, tokens),
operator (answer approvals, control tasks and queues, switch modes, set limits, feed and
stop processes, export evidence, read), submitter (submit turns; read and interrupt its
own) or viewer (read). The tokens live in the data directory's store, hashed: a token
created, rotated or revoked here holds at once for every daemon serving the directory.
A new token is printed once and cannot be shown again.

The api-token file agentrt serve creates holds the default tenant's admin token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRotateCmd(), newTokenRevokeCmd())
	return cmd
}

func newTokenCreateCmd() *cobra.Command {
	f := jsonStoreFlags{storeFlags: storeFlags{create: true}}
	var tenant, principal, role, name string
	cmd := &cobra.Command{
		Use:   "create --principal NAME --role ROLE [--tenant ID] [--name LABEL]",
		Short: "Create a token and print it, once",
		Long: `Create a token for a principal of a tenant in a role (admin, operator, submitter or viewer)
and print it: the only time it is shown. With --json, print it as POST /v1/tokens answers.
On a data directory without a store it makes one, so tokens can be provisioned before the
first agentrt serve.

Exit codes: 0 created, 1 the store could not be written, 2 usage or configuration error
(an unknown role, a malformed principal or tenant).`,
		Example: `  agentrt token create --principal alice --role operator --name "alice's laptop"
  agentrt token create --tenant acme --principal ci:deploy --role submitter --json | jq -r .token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if principal == "" || role == "" {
				return usageErr("%s needs --principal and --role (admin, operator, submitter or viewer)", cmd.CommandPath())
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			k, err := b.CreateToken(commandContext(cmd), &apitype.CreateTokenParams{
				Owner: runtype.Owner{TenantID: tenant, PrincipalID: principal}, Role: runtype.APIRole(role), Name: name,
			})
			if err != nil {
				return tokenErr("", err)
			}
			return printNewToken(cmd.OutOrStdout(), k, f.json)
		},
	}
	f.register(cmd, "print the token as JSON")
	fl := cmd.Flags()
	fl.StringVar(&tenant, "tenant", apitype.DefaultTenant, "the tenant whose work the token acts on")
	fl.StringVar(&principal, "principal", "", "who the token acts as (required)")
	fl.StringVar(&role, "role", "", "admin, operator, submitter or viewer (required)")
	fl.StringVar(&name, "name", "", "a label for people")
	return cmd
}

func newTokenListCmd() *cobra.Command {
	var f jsonStoreFlags
	var tenant string
	cmd := &cobra.Command{
		Use:   "list [--tenant ID] [--json]",
		Short: "List the tokens, revoked ones too",
		Long: `List the tokens of every tenant, or of --tenant, oldest first: id, tenant, principal, role,
name, the token's first characters, when it was created, last used (to about a minute) and
revoked. Never the tokens themselves. On a terminal as a table; otherwise, or with --json, as
JSON Lines, one token per line, each as GET /v1/tokens lists it.

Exit codes: 0 listed, 1 the store could not be read, 2 usage or configuration error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			list, err := b.ListTokens(commandContext(cmd), &apitype.ListTokensParams{TenantID: tenant})
			if err != nil {
				return tokenErr("", err)
			}
			return newTokenLister(cmd.OutOrStdout(), f.json).print(list)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's")
	return cmd
}

// newTokenLister prints tokens, never their text.
func newTokenLister(w io.Writer, asJSON bool) *lister[apitype.TokenRead] {
	l := newLister(w, asJSON, []string{"ID", "TENANT", "PRINCIPAL", "ROLE", "PREFIX", "CREATED", "LAST USED", "REVOKED", "NAME"}, func(k *apitype.TokenRead) []string {
		created := k.CreatedAt
		return []string{k.TokenID, k.TenantID, k.PrincipalID, string(k.Role), k.Prefix + "…", stamp(&created), stamp(k.LastUsedAt), stamp(k.RevokedAt), k.Name}
	})
	l.none = "no tokens"
	return l
}

func newTokenRotateCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "rotate TOKEN_ID [--json]",
		Short: "Replace a token with a new one, printed once",
		Long: `Replace a token: the old one is revoked and a new one for the same tenant, principal, role
and name is made, in one commit, and printed: the only time it is shown.

Exit codes: 0 rotated, 1 no such token, it was revoked, or the store failed, 2 usage or
configuration error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return onToken(cmd, args, &f, func(ctx context.Context, b backend, id string) error {
				k, err := b.RotateToken(ctx, id)
				if err != nil {
					return tokenErr(id, err)
				}
				return printNewToken(cmd.OutOrStdout(), k, f.json)
			})
		},
	}
	f.register(cmd, "print the new token as JSON")
	return cmd
}

func newTokenRevokeCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "revoke TOKEN_ID [--json]",
		Short: "Revoke a token",
		Long: `Revoke a token: from the next request on, every daemon serving the data directory refuses
it (401). Revoking a revoked token changes nothing.

Exit codes: 0 revoked, 1 no such token or the store failed, 2 usage or configuration error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return onToken(cmd, args, &f, func(ctx context.Context, b backend, id string) error {
				k, err := b.RevokeToken(ctx, id)
				if err != nil {
					return tokenErr(id, err)
				}
				if f.json {
					return writeIndented(cmd.OutOrStdout(), k)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s, %s of tenant %s) at %s\n", k.TokenID, k.PrincipalID, k.Role, k.TenantID, stamp(k.RevokedAt))
				return nil
			})
		},
	}
	f.register(cmd, "print the revoked token as JSON")
	return cmd
}

// onToken runs do on the backend f names with the command's one
// TOKEN_ID argument.
func onToken(cmd *cobra.Command, args []string, f *jsonStoreFlags, do func(context.Context, backend, string) error) error {
	id, err := oneID(cmd, args, "TOKEN_ID")
	if err != nil {
		return err
	}
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	return do(commandContext(cmd), b, id)
}

// printNewToken prints a token just made, the one time it is shown.
func printNewToken(w io.Writer, k *apitype.NewToken, asJSON bool) error {
	if asJSON {
		return writeIndented(w, k)
	}
	fmt.Fprintf(w, "token %s for %s, %s of tenant %s (shown once; keep it now):\n  %s\n", k.TokenID, k.PrincipalID, k.Role, k.TenantID, k.Token)
	return nil
}

// tokenErr reports what went wrong with token id ("" for none).
func tokenErr(id string, err error) error {
	if id != "" {
		return controlErr("token", id, err)
	}
	return runtimeErr(err)
}
