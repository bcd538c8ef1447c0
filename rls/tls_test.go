package rls_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// pki is a test CA with a server certificate for 127.0.0.1 and a client
// certificate, as files and as a client's tls.Config parts.
type pki struct {
	caFile, certFile, keyFile string
	roots                     *x509.CertPool
	client                    tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rls test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(serial int64, usage x509.ExtKeyUsage, name string) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		kder, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := pki{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem"), roots: x509.NewCertPool()}
	p.roots.AddCert(ca)
	require.NoError(t, os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	sc, sk := leaf(2, x509.ExtKeyUsageServerAuth, "rlserver")
	require.NoError(t, os.WriteFile(p.certFile, sc, 0o600))
	require.NoError(t, os.WriteFile(p.keyFile, sk, 0o600))
	cc, ck := leaf(3, x509.ExtKeyUsageClientAuth, "envoy")
	p.client, err = tls.X509KeyPair(cc, ck)
	require.NoError(t, err)
	return p
}

// call makes one request over a fresh connection with creds and returns
// its error.
func call(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pb.NewRateLimitServiceClient(cc).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "tls")}})
	return err
}

// TestTLS: --tls-cert and --tls-key serve the rate limit service over TLS
// too; a plaintext client is refused.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	s := testserver.Start(t, func(o *server.Options) {
		o.Config.RLS.Addr, o.Config.RLS.Config = "127.0.0.1:0", "testdata/e2e"
		o.Config.TLSCert, o.Config.TLSKey = p.certFile, p.keyFile
	})
	addr := s.RLS.Addr.String()
	require.NoError(t, call(t, addr, credentials.NewTLS(&tls.Config{RootCAs: p.roots})))
	require.Error(t, call(t, addr, insecure.NewCredentials()))
}

// TestMutualTLS: with --tls-ca-cert, both ports want a client certificate
// the CA signed.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	s := testserver.Start(t, func(o *server.Options) {
		o.Config.RLS.Addr, o.Config.RLS.Config = "127.0.0.1:0", "testdata/e2e"
		o.Config.TLSCert, o.Config.TLSKey, o.Config.TLSCACert = p.certFile, p.keyFile, p.caFile
	})
	addr := s.RLS.Addr.String()
	require.NoError(t, call(t, addr, credentials.NewTLS(&tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{p.client}})))
	require.Error(t, call(t, addr, credentials.NewTLS(&tls.Config{RootCAs: p.roots})), "no client certificate")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	with := redis.NewClient(&redis.Options{Addr: s.Addr.String(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{p.client}}})
	defer with.Close()
	require.NoError(t, with.Ping(ctx).Err(), "RESP with a certificate")
	without := redis.NewClient(&redis.Options{Addr: s.Addr.String(), MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: p.roots}})
	defer without.Close()
	require.Error(t, without.Ping(ctx).Err(), "RESP without one")
}
