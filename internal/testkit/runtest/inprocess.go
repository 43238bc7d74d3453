package runtest

import (
	"net/http"
	"net/url"
	"sync"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// started maps the host:port of each simulated endpoint StartSim serves
// to its server, for InProcess.
var started sync.Map

// InProcess is an HTTP client (for pipeline.Options.HTTPClient) that
// carries a request for a simulated endpoint StartSim serves straight to
// its handler, in process, without a socket; any other request goes over
// the network as usual. The endpoint answers the same either way: tests
// whose subject is not the HTTP exchange spare the sockets and the HTTP
// server and client machinery.
var InProcess = &http.Client{Transport: inProcessRouter{}}

type inProcessRouter struct{}

func (inProcessRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if s, ok := started.Load(req.URL.Host); ok {
		return s.(*sim.Server).Transport().RoundTrip(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// serveInProcess lets InProcess reach srv, served at base, until the
// test ends.
func serveInProcess(t interface{ Cleanup(func()) }, srv *sim.Server, base string) {
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	started.Store(u.Host, srv)
	t.Cleanup(func() { started.CompareAndDelete(u.Host, srv) })
}
