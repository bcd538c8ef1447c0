package server_test

import (
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

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testserver"
	"github.com/rlserver/rlserver/server"
	"github.com/stretchr/testify/require"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "rlserver test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile
}

// TestTLS: with --tls-cert/--tls-key the server speaks TLS only (TLS
// connections are served by a goroutine each, not the event loops), and
// go-redis over TLS gets the same answers.
func TestTLS(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	s := testserver.Start(t, func(o *server.Options) { o.Config.TLSCert, o.Config.TLSKey = cert, key })
	ctx := testCtx(t, 30*time.Second)
	rdb := newClient(t, s, func(o *redis.Options) {
		o.TLSConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	})
	require.Equal(t, "PONG", rdb.Ping(ctx).Val())
	got, err := throttle(ctx, rdb, "tls", 15, 30, 60).Result()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 16, 15, -1, 2}, ints(t, got))
	pipe := rdb.Pipeline()
	for range 100 {
		throttle(ctx, pipe, "tls-pipe", 9, 10, 60)
	}
	cmds, err := pipe.Exec(ctx)
	require.NoError(t, err)
	admitted := 0
	for _, c := range cmds {
		if ints(t, c.(*redis.Cmd).Val())[0] == 0 {
			admitted++
		}
	}
	require.Equal(t, 10, admitted)
	// A plaintext client gets nothing it can read as RESP.
	plain := newClient(t, s, nil)
	require.Error(t, plain.Ping(ctx).Err())
}
