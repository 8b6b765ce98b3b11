package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// seenRequest is what the upstream got.
type seenRequest struct {
	method, uri, host string
	header            http.Header
	body              string
	contentLength     int64
}

// upstream is a model server stand-in that records its requests.
func upstream(t *testing.T, reply http.HandlerFunc) (string, chan seenRequest) {
	t.Helper()
	seen := make(chan seenRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- seenRequest{r.Method, r.RequestURI, r.Host, r.Header, string(body), r.ContentLength}
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return hostPort(t, srv.URL), seen
}

func hostPort(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

// front serves gw over HTTP and returns its URL and its traces.
func front(t *testing.T, gw *Gateway) (string, chan Trace) {
	t.Helper()
	traces := make(chan Trace, 16)
	gw.OnTrace = func(tr Trace) { traces <- tr }
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { gw.Close() })
	return srv.URL, traces
}

func nextTrace(t *testing.T, traces chan Trace) Trace {
	t.Helper()
	select {
	case tr := <-traces:
		return tr
	case <-time.After(10 * time.Second):
		t.Fatal("no trace")
		return Trace{}
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

func jsonReply(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// checkResponseBody checks the tail of a stream's log: response_body
// messages carrying n bytes in all, end_of_stream on the last only, then
// the gateway's half-close.
func checkResponseBody(t *testing.T, msgs []string, n int) {
	t.Helper()
	if len(msgs) < 2 || msgs[len(msgs)-1] != "EOF" {
		t.Fatalf("response phase %q: want response_body messages, then EOF", msgs)
	}
	total := 0
	for i, m := range msgs[:len(msgs)-1] {
		var size int
		var eos bool
		if _, err := fmt.Sscanf(m, "response_body %d eos=%t", &size, &eos); err != nil {
			t.Fatalf("message %q: want response_body", m)
		}
		if last := i == len(msgs)-2; eos != last {
			t.Errorf("message %d %q: end_of_stream should be on the last only", i, m)
		}
		total += size
	}
	if total != n {
		t.Errorf("response bodies carried %d bytes, want %d", total, n)
	}
}

// TestRoute sends an OpenAI request bigger than a chunk through the
// gateway, over TLS and in plaintext, and checks every hop.
func TestRoute(t *testing.T) {
	for _, useTLS := range []bool{true, false} {
		t.Run(fmt.Sprintf("tls=%t", useTLS), func(t *testing.T) {
			const upstreamBody = `{"model":"target","choices":[{"text":"hi"}]}`
			endpoint, seen := upstream(t, jsonReply(upstreamBody))
			picker := newFakePicker(routeHeader, endpoint)
			gwURL, traces := front(t, &Gateway{Picker: startPicker(t, picker, useTLS), Plaintext: !useTLS})

			body := `{"model":"alias","prompt":"` + strings.Repeat("a", 150_000) + `"}`
			req, _ := http.NewRequest("POST", gwURL+"/v1/completions?x=1", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Gateway-Inference-Objective", "critical")
			req.Header.Set("X-Remove-Me", "1")
			req.Header.Set("X-Overwrite", "client")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}

			// The client gets the picker's body: the model name given back.
			if resp.StatusCode != 200 || string(got) != `{"model":"alias","choices":[{"text":"hi"}]}` {
				t.Errorf("client got %d %q", resp.StatusCode, got)
			}
			if h := resp.Header; h.Get("X-Went-Into-Resp-Headers") != "true" || h.Get("Content-Type") != "application/json" {
				t.Errorf("client headers %v: want the picker's response header mutation", h)
			}

			// The upstream gets the picker's body and mutated headers.
			up := <-seen
			forwarded := strings.Replace(body, `"model":"alias"`, `"model":"target"`, 1)
			if up.method != "POST" || up.uri != "/v1/completions?x=1" || up.host != hostPort(t, gwURL) {
				t.Errorf("upstream got %s %s Host %s", up.method, up.uri, up.host)
			}
			if up.body != forwarded || up.contentLength != int64(len(forwarded)) {
				t.Errorf("upstream got a %d-byte body (Content-Length %d), want the picker's %d bytes",
					len(up.body), up.contentLength, len(forwarded))
			}
			for k, want := range map[string][]string{
				"X-Gateway-Destination-Endpoint": {endpoint},
				"X-Picked-By":                    {"fake-picker"},
				"X-Overwrite":                    {"picker"},
				"X-Gateway-Inference-Objective":  {"critical"},
				"Content-Type":                   {"application/json"},
				"X-Remove-Me":                    nil,
			} {
				if got := up.header.Values(k); !slices.Equal(got, want) {
					t.Errorf("upstream header %s = %q, want %q", k, got, want)
				}
			}

			// The picker saw the request as Envoy sends it.
			l := streamLog(t, picker)
			for k, want := range map[string]string{
				":method": "POST", ":path": "/v1/completions?x=1", ":authority": hostPort(t, gwURL), ":scheme": "http",
				"content-type": "application/json", "x-gateway-inference-objective": "critical",
				"content-length": fmt.Sprint(len(body)),
			} {
				if l.reqHeaders[k] != want {
					t.Errorf("picker got header %s = %q, want %q", k, l.reqHeaders[k], want)
				}
			}
			for k := range l.reqHeaders {
				if k != strings.ToLower(k) {
					t.Errorf("picker got header key %q, want lower case", k)
				}
			}
			if string(l.reqBody) != body {
				t.Errorf("picker got a %d-byte body, want %d", len(l.reqBody), len(body))
			}
			if l.respHeaders[":status"] != "200" || l.respHeaders["content-type"] != "application/json" {
				t.Errorf("picker got response headers %v", l.respHeaders)
			}
			want := []string{
				"request_headers eos=false",
				"request_body 65536 eos=false",
				"request_body 65536 eos=false",
				fmt.Sprintf("request_body %d eos=true", len(body)-2*65536),
				"response_headers eos=false",
			}
			if len(l.msgs) < len(want) || !slices.Equal(l.msgs[:len(want)], want) {
				t.Fatalf("picker saw %q, want it to start with %q", l.msgs, want)
			}
			checkResponseBody(t, l.msgs[len(want):], len(upstreamBody))

			if tr := nextTrace(t, traces); tr.Endpoint != endpoint || tr.Status != 200 || tr.Immediate || tr.Err != nil {
				t.Errorf("trace %+v", tr)
			}
		})
	}
}

// TestMetadataDestination takes the destination from the envoy.lb
// metadata when the header is missing, the first of a list, through Do.
func TestMetadataDestination(t *testing.T) {
	endpoint, seen := upstream(t, jsonReply(`{"model":"target"}`))
	picker := newFakePicker(routeMetadata, endpoint)
	gw := &Gateway{Picker: startPicker(t, picker, false), Plaintext: true}
	defer gw.Close()

	req, _ := http.NewRequest("POST", "http://gateway.test/v1/chat/completions", strings.NewReader(`{"model":"alias"}`))
	resp, tr, err := gw.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != `{"model":"alias"}` {
		t.Errorf("got %q", got)
	}
	if tr.Endpoint != endpoint || tr.Endpoints != endpoint+",127.0.0.1:9" || tr.Status != 200 {
		t.Errorf("trace %+v", tr)
	}
	if up := <-seen; up.host != "gateway.test" || up.body != `{"model":"target"}` || up.header.Get(destinationKey) != "" {
		t.Errorf("upstream got %+v", up)
	}
	streamLog(t, picker)
}

// TestStreaming checks that an event stream reaches the client chunk by
// chunk: the client reads the first event before the upstream writes the
// next.
func TestStreaming(t *testing.T) {
	release := make(chan struct{})
	endpoint, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\ndata: [DONE]\n\n")
	})
	picker := newFakePicker(routeHeader, endpoint)
	gwURL, traces := front(t, &Gateway{Picker: startPicker(t, picker, false), Plaintext: true})

	resp, err := client.Post(gwURL+"/v1/completions", "application/json", strings.NewReader(`{"model":"alias","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || first != "data: one\n" {
		t.Fatalf("first line %q, %v: want it before the upstream goes on", first, err)
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "\ndata: two\n\ndata: [DONE]\n\n" {
		t.Errorf("rest %q, %v", rest, err)
	}

	l := streamLog(t, picker)
	tail := l.msgs[slices.Index(l.msgs, "response_headers eos=false")+1:]
	if len(tail) < 3 { // at least two body messages, then EOF
		t.Errorf("picker saw %q: want the events in separate messages", l.msgs)
	}
	checkResponseBody(t, tail, len("data: one\n\ndata: two\n\ndata: [DONE]\n\n"))
	if tr := nextTrace(t, traces); tr.Endpoint != endpoint || tr.Err != nil {
		t.Errorf("trace %+v", tr)
	}
}

// TestImmediateResponse passes the picker's refusal to the client and
// sends nothing upstream.
func TestImmediateResponse(t *testing.T) {
	endpoint, seen := upstream(t, jsonReply(`{}`))
	picker := newFakePicker(refuse, endpoint)
	gwURL, traces := front(t, &Gateway{Picker: startPicker(t, picker, false), Plaintext: true})

	body := `{"model":"alias","prompt":"hi"}`
	resp, err := client.Post(gwURL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.HasPrefix(string(got), "inference error: ServiceUnavailable") ||
		resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("client got %d %q %v", resp.StatusCode, got, resp.Header)
	}
	want := []string{"request_headers eos=false", fmt.Sprintf("request_body %d eos=true", len(body))}
	if l := streamLog(t, picker); !slices.Equal(l.msgs, want) {
		t.Errorf("picker saw %q, want %q", l.msgs, want)
	}
	if tr := nextTrace(t, traces); !tr.Immediate || tr.Status != 503 || tr.Endpoint != "" || tr.Err != nil {
		t.Errorf("trace %+v", tr)
	}
	if len(seen) != 0 {
		t.Error("the upstream got a request")
	}
}

// TestBodyless sends a GET: headers with end_of_stream, answered at once.
func TestBodyless(t *testing.T) {
	endpoint, seen := upstream(t, jsonReply(`{"data":[]}`))
	picker := newFakePicker(routeHeader, endpoint)
	gwURL, _ := front(t, &Gateway{Picker: startPicker(t, picker, false), Plaintext: true})

	resp, err := client.Get(gwURL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != `{"data":[]}` {
		t.Errorf("client got %d %q", resp.StatusCode, got)
	}
	if up := <-seen; up.method != "GET" || up.uri != "/v1/models" || up.body != "" {
		t.Errorf("upstream got %+v", up)
	}
	l := streamLog(t, picker)
	want := []string{"request_headers eos=true", "response_headers eos=false"}
	if len(l.msgs) < 2 || !slices.Equal(l.msgs[:2], want) {
		t.Fatalf("picker saw %q, want it to start with %q", l.msgs, want)
	}
	checkResponseBody(t, l.msgs[2:], len(`{"data":[]}`))
}

// TestFailures answers 502 naming the stage, and does not hang when the
// picker ends the stream, fails it, or never answers.
func TestFailures(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String() // nobody listens there
	lis.Close()

	for _, c := range []struct {
		name, mode, endpoint string
		stage                Stage
		text                 string
	}{
		{"picker hangs up", hangUp, "", StagePicker, "closed the stream before answering the request headers"},
		{"picker crashes", crash, "", StagePicker, "picker crashed"},
		{"picker stalls", stall, "", StagePicker, "DeadlineExceeded"},
		{"no destination", routeNowhere, "", StageEndpoint, "names no x-gateway-destination-endpoint"},
		{"upstream down", routeHeader, closed, StageUpstream, "connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			picker := newFakePicker(c.mode, c.endpoint)
			gwURL, traces := front(t, &Gateway{Picker: startPicker(t, picker, false), Plaintext: true, Timeout: time.Second})
			start := time.Now()
			resp, err := client.Post(gwURL+"/v1/completions", "application/json", strings.NewReader(`{"model":"alias"}`))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 502 || !strings.Contains(string(got), "gateway: "+string(c.stage)+": ") ||
				!strings.Contains(string(got), c.text) {
				t.Errorf("client got %d %q, want 502 naming %q and %q", resp.StatusCode, got, c.stage, c.text)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if tr := nextTrace(t, traces); tr.Stage != c.stage || tr.Status != 502 || tr.Err == nil {
				t.Errorf("trace %+v", tr)
			}
		})
	}
}

// TestApplyMutation follows Envoy's append rules for set_headers.
func TestApplyMutation(t *testing.T) {
	h := http.Header{"A": {"1"}, "B": {"1"}, "C": {"1"}, "D": {"1"}, "Gone": {"1"}}
	opt := func(k string, action corev3.HeaderValueOption_HeaderAppendAction, appendFlag bool) *corev3.HeaderValueOption {
		o := option(k, "2")
		o.AppendAction = action
		if appendFlag {
			o.Append = wrapperspb.Bool(true)
		}
		return o
	}
	applyMutation(h, &extprocv3.HeaderMutation{
		RemoveHeaders: []string{"gone"},
		SetHeaders: []*corev3.HeaderValueOption{
			opt("a", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD, false), // overwrite
			opt("b", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD, true),  // append
			opt("c", corev3.HeaderValueOption_ADD_IF_ABSENT, false),           // kept
			opt("d", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS, false),     // overwrite
			opt("e", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS, false),     // absent: not added
			opt("f", corev3.HeaderValueOption_ADD_IF_ABSENT, false),           // added
			opt(":path", 0, false), opt("host", 0, false), opt("Content-Length", 0, false),
		},
	})
	want := http.Header{"A": {"2"}, "B": {"1", "2"}, "C": {"1"}, "D": {"2"}, "F": {"2"}}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", h, want)
	}
}
