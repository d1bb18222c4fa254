package schedule

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	for _, bb := range []struct{ name, cron string }{
		{"fixed hour", "30 2 * * 1-5"},
		{"every hour", "*/15 * * * *"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			s := mustParse(b, Spec{Kind: KindCron, Cron: bb.cron, TimeZone: "America/New_York"})
			t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				t = s.Next(t)
			}
		})
	}
}

func BenchmarkDue(b *testing.B) {
	s := mustParse(b, Spec{Kind: KindCron, Cron: "* * * * *", TimeZone: "Europe/Berlin"})
	next := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	b.Run("on time", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Due(next, next.Add(time.Second), time.Minute, 10)
		}
	})
	b.Run("a day late", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Due(next, next.Add(24*time.Hour), time.Minute, 10)
		}
	})
}
