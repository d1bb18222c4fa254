package memstore

// Stubs until the governance records are implemented; replaced by
// governance.go.

import (
	"context"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func (*Store) ActionGet(context.Context, *store.ActionGetParams) (*runtype.Action, error) {
	return nil, store.ErrNotFound
}
func (*Store) ActionList(context.Context, *store.ActionListParams) ([]*runtype.Action, error) {
	return nil, nil
}
func (*Store) GrantList(context.Context, *store.GrantListParams) ([]*runtype.PolicyGrant, error) {
	return nil, nil
}
func (*Store) ReceiptList(context.Context, *store.ReceiptListParams) ([]*runtype.Receipt, error) {
	return nil, nil
}
func (*Tx) ActionGet(context.Context, *store.ActionGetParams) (*runtype.Action, error) {
	return nil, store.ErrNotFound
}
func (*Tx) ActionList(context.Context, *store.ActionListParams) ([]*runtype.Action, error) {
	return nil, nil
}
func (*Tx) GrantList(context.Context, *store.GrantListParams) ([]*runtype.PolicyGrant, error) {
	return nil, nil
}
func (*Tx) ReceiptList(context.Context, *store.ReceiptListParams) ([]*runtype.Receipt, error) {
	return nil, nil
}
