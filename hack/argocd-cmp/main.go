// Command argocd-cmp runs a Config Management Plugin the way Argo CD does,
// with Argo CD's own code and in one process: the repo server's side
// (util/cmp.SendRepoStream: the repository packed as a tar.gz with the
// application's path and environment) talking to the CMP server's side
// (cmpserver/plugin.Service: MatchRepository, then GenerateManifest, which
// unpack into a fresh work directory and run the plugin's commands there).
// Only the gRPC transport between the two containers is left out.
//
//	argocd-cmp -config DIR -repo ROOT -app PATH [NAME=VALUE]...
//
// DIR holds plugin.yaml; PATH is the application's directory inside ROOT;
// NAME=VALUE are the variables the repo server sends (ARGOCD_APP_*,
// KUBE_*, ARGOCD_ENV_*). It prints "match: true|false" on stderr, the
// generated manifests on stdout as one YAML stream, and exits 1 when
// generation fails, with Argo CD's error message.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	"github.com/argoproj/argo-cd/v3/util/cmp"
)

// stream is both ends of one client-streaming call in memory.
type stream struct {
	ctx  context.Context
	reqs chan *apiclient.AppStreamRequest
	resp any
}

func newStream(ctx context.Context) *stream {
	return &stream{ctx: ctx, reqs: make(chan *apiclient.AppStreamRequest, 64)}
}

// The repo server's side.
func (s *stream) Send(r *apiclient.AppStreamRequest) error { s.reqs <- r; return nil }

// The CMP server's side.
func (s *stream) Recv() (*apiclient.AppStreamRequest, error) {
	r, ok := <-s.reqs
	if !ok {
		return nil, io.EOF
	}
	return r, nil
}
func (s *stream) Context() context.Context     { return s.ctx }
func (s *stream) SetHeader(metadata.MD) error  { return nil }
func (s *stream) SendHeader(metadata.MD) error { return nil }
func (s *stream) SetTrailer(metadata.MD)       {}
func (s *stream) SendMsg(any) error            { return errors.New("not a server-streaming call") }
func (s *stream) RecvMsg(any) error            { return errors.New("use Recv") }
func (s *matchStream) SendAndClose(r *apiclient.RepositoryResponse) error {
	s.resp = r
	return nil
}
func (s *generateStream) SendAndClose(r *apiclient.ManifestResponse) error {
	s.resp = r
	return nil
}

type matchStream struct{ *stream }
type generateStream struct{ *stream }

// call sends the repository on one stream while the server side runs.
func call(ctx context.Context, root, app string, env []string, s *stream, serve func() error) error {
	errc := make(chan error, 1)
	go func() {
		err := cmp.SendRepoStream(ctx, filepath.Join(root, app), root, s, env, nil)
		close(s.reqs)
		errc <- err
	}()
	err := serve()
	if sendErr := <-errc; err == nil {
		err = sendErr
	}
	return err
}

func main() {
	configDir := flag.String("config", "", "directory holding plugin.yaml")
	root := flag.String("repo", "", "repository root")
	app := flag.String("app", "", "application path inside the repository")
	flag.Parse()
	env := flag.Args()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg, err := plugin.ReadPluginConfig(*configDir)
	if err != nil {
		fail(err)
	}
	svc := plugin.NewService(plugin.CMPServerInitConstants{PluginConfig: *cfg})
	ctx := context.Background()

	m := matchStream{newStream(ctx)}
	if err := call(ctx, *root, *app, env, m.stream, func() error { return svc.MatchRepository(&m) }); err != nil {
		fail(fmt.Errorf("match: %w", err))
	}
	match, _ := m.resp.(*apiclient.RepositoryResponse)
	fmt.Fprintf(os.Stderr, "match: %v\n", match != nil && match.GetIsSupported())

	g := generateStream{newStream(ctx)}
	if err := call(ctx, *root, *app, env, g.stream, func() error { return svc.GenerateManifest(&g) }); err != nil {
		fail(err)
	}
	res, _ := g.resp.(*apiclient.ManifestResponse)
	fmt.Print(strings.Join(res.GetManifests(), "\n---\n"))
	fmt.Println()
}
