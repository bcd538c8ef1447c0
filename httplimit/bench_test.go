package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/httplimit"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
)

// BenchmarkMiddleware is one request through a bare handler, through the
// middleware deciding on a real rlserver (in process, over loopback: the
// round trip is most of it), and through the middleware deciding in
// process (client.Local, what it falls back to).
func BenchmarkMiddleware(b *testing.B) {
	s := testserver.Start(b, func(o *server.Options) { o.Config.ClockMode = "real"; o.ClockStart = 0 })
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr.String()})
	b.Cleanup(func() { rdb.Close() })
	rule := httplimit.Rule{Name: "default", Policy: client.Policy{Algorithm: client.Slide, Limit: 1 << 40, Period: time.Minute}}
	for _, c := range []struct {
		name string
		h    func() (h func(int) *httptest.ResponseRecorder)
	}{
		{"bare", func() func(int) *httptest.ResponseRecorder { return serve(ok) }},
		{"rlserver", func() func(int) *httptest.ResponseRecorder {
			return serve(httplimit.New(httplimit.Options{Limiter: client.New(rdb)}).Limit(rule, ok))
		}},
		{"local", func() func(int) *httptest.ResponseRecorder {
			return serve(httplimit.New(httplimit.Options{Limiter: client.NewLocal()}).Limit(rule, ok))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			do := c.h()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if w := do(i); w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

func serve(h http.Handler) func(int) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/hello", nil)
	return func(i int) *httptest.ResponseRecorder {
		r.Header.Set("X-API-Key", "k"+strconv.Itoa(i%1000))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
}
