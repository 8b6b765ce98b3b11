package gateway

import (
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// hopByHop are the connection's own headers, which a proxy does not pass on.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"}

// cleanHeader copies h without hop-by-hop headers and without
// Content-Length: the gateway knows every body's length when it sends it,
// and the picker may change it (director.go:257-267; server.go:354-368).
func cleanHeader(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		out.Del(name)
	}
	out.Del("Content-Length")
	return out
}

// requestHeaderMap is the request's headers as Envoy hands them to the
// picker: the pseudo-headers first, then the rest, keys lower-case and
// values in raw_value (the picker reads raw_value first: headers.go:27-31).
func requestHeaderMap(req *http.Request, h http.Header, bodyLen int) *corev3.HeaderMap {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	m := &corev3.HeaderMap{}
	add(m, ":method", req.Method)
	add(m, ":path", requestURI(req))
	add(m, ":authority", authority(req))
	add(m, ":scheme", scheme)
	addAll(m, h)
	if bodyLen > 0 {
		add(m, "content-length", strconv.Itoa(bodyLen))
	}
	return m
}

// responseHeaderMap is the upstream response's status and headers.
func responseHeaderMap(status int, h http.Header) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	add(m, ":status", strconv.Itoa(status))
	addAll(m, h)
	return m
}

func add(m *corev3.HeaderMap, key, value string) {
	m.Headers = append(m.Headers, &corev3.HeaderValue{Key: key, RawValue: []byte(value)})
}

func addAll(m *corev3.HeaderMap, h http.Header) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			add(m, strings.ToLower(k), v)
		}
	}
}

func headerValue(hv *corev3.HeaderValue) string {
	if raw := hv.GetRawValue(); len(raw) > 0 {
		return string(raw)
	}
	return hv.GetValue()
}

// applyMutation applies the picker's header mutation to h: removals first,
// then set_headers, as Envoy's ext_proc filter does (mutation_utils.cc,
// applyHeaderMutations). Pseudo-headers, Host and Content-Length are left
// alone: the picker only echoes the pseudo-headers it got (it does not
// filter them: util/request/headers.go:30-50), Envoy's default rules keep
// routing headers, and the gateway sets lengths from the bodies it sends.
func applyMutation(h http.Header, m *extprocv3.HeaderMutation) {
	for _, name := range m.GetRemoveHeaders() {
		if settable(name) {
			h.Del(name)
		}
	}
	for _, o := range m.GetSetHeaders() {
		key := o.GetHeader().GetKey()
		if !settable(key) {
			continue
		}
		value := headerValue(o.GetHeader())
		exists := len(h.Values(key)) > 0
		switch o.GetAppendAction() {
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			if !exists {
				h.Set(key, value)
			}
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
			h.Set(key, value)
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
			if exists {
				h.Set(key, value)
			}
		default:
			// APPEND_IF_EXISTS_OR_ADD is the zero value, so Envoy reads the
			// legacy append flag instead, false by default: a plain entry,
			// as the picker sends (request.go:102-148), overwrites.
			if o.GetAppend().GetValue() {
				h.Add(key, value)
			} else {
				h.Set(key, value)
			}
		}
	}
}

func settable(key string) bool {
	k := textproto.CanonicalMIMEHeaderKey(key)
	return key != "" && !strings.HasPrefix(key, ":") && k != "Host" && k != "Content-Length"
}
