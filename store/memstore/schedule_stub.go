package memstore

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TODO(i20-store): replaced by the schedule store.
var errScheduleStub = errors.New("schedules: not in this store yet")

func (*Store) ScheduleGet(context.Context, *store.ScheduleGetParams) (*runtype.Schedule, error) {
	return nil, errScheduleStub
}
func (*Store) ScheduleList(context.Context, *store.ScheduleListParams) ([]*runtype.Schedule, error) {
	return nil, errScheduleStub
}
func (*Store) ScheduleListDue(context.Context, *store.ScheduleListDueParams) ([]*runtype.Schedule, error) {
	return nil, nil
}
func (*Store) FireGet(context.Context, *store.FireGetParams) (*runtype.Fire, error) {
	return nil, errScheduleStub
}
func (*Store) FireList(context.Context, *store.FireListParams) ([]*runtype.Fire, error) {
	return nil, errScheduleStub
}

func (*Tx) ScheduleGet(context.Context, *store.ScheduleGetParams) (*runtype.Schedule, error) {
	return nil, errScheduleStub
}
func (*Tx) ScheduleList(context.Context, *store.ScheduleListParams) ([]*runtype.Schedule, error) {
	return nil, errScheduleStub
}
func (*Tx) ScheduleListDue(context.Context, *store.ScheduleListDueParams) ([]*runtype.Schedule, error) {
	return nil, nil
}
func (*Tx) FireGet(context.Context, *store.FireGetParams) (*runtype.Fire, error) {
	return nil, errScheduleStub
}
func (*Tx) FireList(context.Context, *store.FireListParams) ([]*runtype.Fire, error) {
	return nil, errScheduleStub
}
