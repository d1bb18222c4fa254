package pgstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentrt/agentrt/store/sqlitestore"
)

// pipeline runs stmts in the transaction open on conn as one pgx batch:
// one round trip (sqlitestore.Dialect.Pipeline). PostgreSQL skips the
// statements after the first that fails, which pipeline reports.
func pipeline(ctx context.Context, conn *sql.Conn, stmts []sqlitestore.Queued) (failed int, err error) {
	failed = len(stmts)
	rerr := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pipelining: a %T is no pgx connection", dc)
		}
		var b pgx.Batch
		for i := range stmts {
			b.Queue(stmts[i].SQL, stmts[i].Args...)
		}
		br := sc.Conn().SendBatch(ctx, &b)
		for i := range stmts {
			s := &stmts[i]
			if s.Texts || s.Returning {
				s.N, s.Last, s.Text = 0, 0, s.Text[:0]
				err := eachRow(br, func(rows pgx.Rows) error {
					if s.Texts {
						var text string
						err := rows.Scan(&text)
						s.Text = append(s.Text, text)
						return err
					}
					s.N++
					return rows.Scan(&s.Last)
				})
				if err != nil {
					failed = i
					_ = br.Close()
					return err
				}
				continue
			}
			tag, err := br.Exec()
			if err != nil {
				failed = i
				_ = br.Close()
				return err
			}
			s.N = tag.RowsAffected()
		}
		return br.Close()
	})
	return failed, rerr
}

// eachRow calls fn on each row of the batch's next result.
func eachRow(br pgx.BatchResults, fn func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
