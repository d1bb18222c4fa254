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
			if s.Texts {
				rows, err := br.Query()
				if err == nil {
					s.Text = s.Text[:0]
					for rows.Next() {
						var text string
						if err = rows.Scan(&text); err != nil {
							break
						}
						s.Text = append(s.Text, text)
					}
					rows.Close()
					if err == nil {
						err = rows.Err()
					}
				}
				if err != nil {
					failed = i
					_ = br.Close()
					return err
				}
				continue
			}
			if s.Returning {
				rows, err := br.Query()
				if err == nil {
					s.N, s.Last = 0, 0
					for rows.Next() {
						if err = rows.Scan(&s.Last); err != nil {
							break
						}
						s.N++
					}
					rows.Close()
					if err == nil {
						err = rows.Err()
					}
				}
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
