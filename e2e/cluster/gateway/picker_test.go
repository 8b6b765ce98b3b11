package gateway

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// fakePicker is a test double of the EPP's ext_proc server, for this
// package's unit tests only. It follows pkg/epp/handlers/server.go at
// v1.5.0 (gie.md §2): it withholds the headers' answer until the body's
// end_of_stream, answers set_headers with the destination and the envoy.lb
// metadata, sends the body back rewritten and re-chunked, echoes the
// response phases, and takes EOF as the end. Its mode picks what it does
// at the body's end_of_stream.
type fakePicker struct {
	extprocv3.UnimplementedExternalProcessorServer
	mode     string
	endpoint string
	streams  chan *pickerLog // one per stream, when it ends
}

const (
	routeHeader   = "route"    // destination in the header and the metadata
	routeMetadata = "metadata" // destination only in the metadata, as a list
	routeNowhere  = "nowhere"  // no destination at all
	refuse        = "refuse"   // immediate_response 503 (director.go:172-178)
	hangUp        = "hangup"   // end the stream without a word
	crash         = "crash"    // end the stream with a gRPC error
	stall         = "stall"    // never answer
)

// fakeChunk is the fake's answer chunk size, small so that the gateway
// must put bodies together from many chunks (the picker uses 62000).
const fakeChunk = 1000

// pickerLog is what the fake saw on one stream.
type pickerLog struct {
	msgs        []string // "request_headers eos=false", "request_body 10 eos=true", ..., "EOF"
	reqHeaders  map[string]string
	respHeaders map[string]string
	reqBody     []byte
}

func (l *pickerLog) log(format string, args ...any) {
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func newFakePicker(mode, endpoint string) *fakePicker {
	return &fakePicker{mode: mode, endpoint: endpoint, streams: make(chan *pickerLog, 16)}
}

func (f *fakePicker) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	l := &pickerLog{reqHeaders: map[string]string{}, respHeaders: map[string]string{}}
	defer func() { f.streams <- l }()
	streaming := false
	var respBody []byte
	for {
		req, err := srv.Recv()
		if err == io.EOF {
			l.log("EOF")
			return nil
		}
		if err != nil {
			l.log("recv error")
			return err
		}
		switch v := req.Request.(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			h := v.RequestHeaders
			l.log("request_headers eos=%t", h.EndOfStream)
			for _, hv := range h.GetHeaders().GetHeaders() {
				l.reqHeaders[hv.Key] = string(hv.RawValue)
			}
			if h.EndOfStream { // no body: answer at once (request.go:41-53)
				if err := srv.Send(f.headersAnswer(l, 0)); err != nil {
					return err
				}
			}
		case *extprocv3.ProcessingRequest_RequestBody:
			b := v.RequestBody
			l.log("request_body %d eos=%t", len(b.Body), b.EndOfStream)
			l.reqBody = append(l.reqBody, b.Body...)
			if !b.EndOfStream {
				continue
			}
			switch f.mode {
			case refuse:
				return srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
					ImmediateResponse: &extprocv3.ImmediateResponse{
						Status: &typev3.HttpStatus{Code: typev3.StatusCode_ServiceUnavailable},
						Body:   []byte("inference error: ServiceUnavailable - failed to find endpoint candidates for serving the request"),
					},
				}})
			case hangUp:
				return nil
			case crash:
				return status.Error(codes.Internal, "picker crashed")
			case stall:
				<-srv.Context().Done()
				return srv.Context().Err()
			}
			body := bytes.ReplaceAll(l.reqBody, []byte(`"model":"alias"`), []byte(`"model":"target"`))
			if err := srv.Send(f.headersAnswer(l, len(body))); err != nil {
				return err
			}
			for _, c := range chunks(body, true) {
				err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
					RequestBody: &extprocv3.BodyResponse{Response: c},
				}})
				if err != nil {
					return err
				}
			}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			h := v.ResponseHeaders
			l.log("response_headers eos=%t", h.EndOfStream)
			var set []*corev3.HeaderValueOption
			set = append(set, option("x-went-into-resp-headers", "true"))
			for _, hv := range h.GetHeaders().GetHeaders() {
				l.respHeaders[hv.Key] = string(hv.RawValue)
				set = append(set, option(hv.Key, string(hv.RawValue)))
			}
			streaming = strings.Contains(l.respHeaders["content-type"], "text/event-stream")
			err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
				ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
					HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: set},
				}},
			}})
			if err != nil {
				return err
			}
		case *extprocv3.ProcessingRequest_ResponseBody:
			b := v.ResponseBody
			l.log("response_body %d eos=%t", len(b.Body), b.EndOfStream)
			var out []*extprocv3.CommonResponse
			if streaming { // echo each chunk at once (server.go:278-287)
				out = chunks(unrewrite(b.Body), b.EndOfStream)
			} else if respBody = append(respBody, b.Body...); b.EndOfStream {
				out = chunks(unrewrite(respBody), true) // server.go:288-292
			}
			for _, c := range out {
				err := srv.Send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
					ResponseBody: &extprocv3.BodyResponse{Response: c},
				}})
				if err != nil {
					return err
				}
			}
		}
	}
}

// systemOwned are the headers the picker does not echo
// (util/request/headers.go:30-50), plus one this fake removes.
var systemOwned = map[string]bool{
	"x-gateway-inference-fairness-id":       true,
	"x-gateway-inference-objective":         true,
	"x-gateway-model-name-rewrite":          true,
	"x-gateway-destination-endpoint-subset": true,
	"x-gateway-destination-endpoint":        true,
	"x-gateway-destination-endpoint-served": true,
	"content-length":                        true,
	"x-remove-me":                           true,
	"x-overwrite":                           true,
}

// headersAnswer is the picker's answer to the request headers
// (request.go:75-168): the destination, Content-Length, the echo of the
// other headers (pseudo-headers included), and the envoy.lb metadata.
func (f *fakePicker) headersAnswer(l *pickerLog, bodyLen int) *extprocv3.ProcessingResponse {
	var set []*corev3.HeaderValueOption
	if f.mode == routeHeader {
		set = append(set, option(destinationKey, f.endpoint))
	}
	if bodyLen > 0 {
		set = append(set, option("Content-Length", strconv.Itoa(bodyLen)))
	}
	set = append(set, option("x-picked-by", "fake-picker"), option("x-overwrite", "picker"))
	for k, v := range l.reqHeaders {
		if !systemOwned[k] {
			set = append(set, option(k, v))
		}
	}
	resp := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			ClearRouteCache: true,
			HeaderMutation:  &extprocv3.HeaderMutation{SetHeaders: set, RemoveHeaders: []string{"x-remove-me"}},
		}},
	}}
	switch f.mode {
	case routeHeader:
		resp.DynamicMetadata = lbMetadata(f.endpoint)
	case routeMetadata:
		resp.DynamicMetadata = lbMetadata(f.endpoint + ",127.0.0.1:9")
	}
	return resp
}

func option(key, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: key, RawValue: []byte(value)}}
}

func lbMetadata(endpoints string) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{lbNamespace: map[string]any{destinationKey: endpoints}})
	if err != nil {
		panic(err)
	}
	return s
}

// chunks is BuildChunkedBodyResponses (chunking.go:31-74) with the fake's
// chunk size: at least one chunk, end_of_stream on the last if eos.
func chunks(body []byte, eos bool) []*extprocv3.CommonResponse {
	var out []*extprocv3.CommonResponse
	for off := 0; off == 0 || off < len(body); off += fakeChunk {
		end := min(off+fakeChunk, len(body))
		out = append(out, &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
			Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{
				Body: body[off:end], EndOfStream: eos && end == len(body),
			}},
		}})
	}
	return out
}

// unrewrite gives the client back its model name (server.go:354-368).
func unrewrite(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`"model":"target"`), []byte(`"model":"alias"`))
}

// startPicker serves f on a local port, over TLS with a self-signed
// certificate like the EPP's default, or in plaintext.
func startPicker(t *testing.T, f *fakePicker, useTLS bool) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if useTLS {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})))
	}
	srv := grpc.NewServer(opts...)
	extprocv3.RegisterExternalProcessorServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// streamLog waits for the fake's next finished stream.
func streamLog(t *testing.T, f *fakePicker) *pickerLog {
	t.Helper()
	select {
	case l := <-f.streams:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("the picker's stream did not end")
		return nil
	}
}
