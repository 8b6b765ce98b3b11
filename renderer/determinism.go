package renderer

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/template"
	"time"
)

// Seeded versions of the sprig functions that are random or read the clock
// (NonDeterministic). Each call draws from its own stream, seeded by the
// release name, the top chart, the template being rendered, the number of
// such calls before it in that template and the function's name: the same
// input renders the same bytes, and a different release gets different
// passwords and keys. The clock is Options.Now. Keys and certificates are
// real ones (the same seed gives the same key): Go's own key generation
// no longer takes a caller's randomness, so RSA primes are searched here
// from the stream, and ECDSA and Ed25519 keys are derived from it.

// seededFuncs returns the seeded functions for one render.
func seededFuncs(st *renderState) template.FuncMap {
	now := st.now
	ago := func(d any) string {
		t, ok := asTime(d)
		if !ok {
			t = now
		}
		return now.Sub(t).Round(time.Second).String()
	}
	chars := func(name, set string) func(int) (string, error) {
		return func(n int) (string, error) {
			if n < 0 {
				return "", fmt.Errorf("%s: the length %d is negative", name, n)
			}
			if err := st.budget.charge(name, int64(n)); err != nil {
				return "", err
			}
			r := st.stream(name)
			b := make([]byte, n)
			for i := range b {
				b[i] = set[r.IntN(len(set))]
			}
			return string(b), nil
		}
	}
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	const digits = "0123456789"
	var ascii strings.Builder
	for c := byte(32); c < 127; c++ {
		ascii.WriteByte(c)
	}
	return template.FuncMap{
		"now": func() time.Time { return now },
		"ago": ago,
		"durationRound": func(d any) (string, error) {
			if t, ok := d.(time.Time); ok {
				d = int64(now.Sub(t))
			}
			return sharedBaseFuncs()["durationRound"].(func(any) (string, error))(d)
		},
		"randAlphaNum": chars("randAlphaNum", letters+digits),
		"randAlpha":    chars("randAlpha", letters),
		"randNumeric":  chars("randNumeric", digits),
		"randAscii":    chars("randAscii", ascii.String()),
		"randBytes": func(n int) (string, error) {
			if n < 0 {
				return "", fmt.Errorf("randBytes: the length %d is negative", n)
			}
			if err := st.budget.charge("randBytes", int64(n)*2); err != nil {
				return "", err
			}
			b := make([]byte, n)
			st.stream("randBytes").read(b)
			return base64.StdEncoding.EncodeToString(b), nil
		},
		"randInt": func(lo, hi int) (int, error) {
			if hi <= lo {
				return 0, fmt.Errorf("randInt: the upper bound %d must be above the lower bound %d", hi, lo)
			}
			return lo + st.stream("randInt").IntN(hi-lo), nil
		},
		"uuidv4": func() string {
			var u [16]byte
			st.stream("uuidv4").read(u[:])
			u[6] = u[6]&0x0f | 0x40
			u[8] = u[8]&0x3f | 0x80
			return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
		},
		"shuffle": func(s string) string {
			r := []rune(s)
			rs := st.stream("shuffle")
			for i := len(r) - 1; i > 0; i-- {
				j := rs.IntN(i + 1)
				r[i], r[j] = r[j], r[i]
			}
			return string(r)
		},
		"bcrypt": func(s string) (string, error) {
			return bcryptSeeded(s, st.stream("bcrypt"))
		},
		"htpasswd": func(user, password string) (string, error) {
			if strings.Contains(user, ":") {
				return fmt.Sprintf("invalid username: %s", user), nil
			}
			h, err := bcryptSeeded(password, st.stream("htpasswd"))
			return user + ":" + h, err
		},
		"encryptAES": func(password, plaintext string) (string, error) {
			return encryptAESSeeded(password, plaintext, st.stream("encryptAES"))
		},
		"genPrivateKey": func(typ string) (string, error) {
			if err := st.budget.charge("genPrivateKey", 1<<20); err != nil {
				return "", err
			}
			key, err := seededKey(typ, st.stream("genPrivateKey"))
			if err != nil {
				return "", err
			}
			return string(pem.EncodeToMemory(pemBlockForKey(key))), nil
		},
		"genCA": func(cn string, days int) (certificate, error) {
			r := st.stream("genCA")
			key, err := seededRSA(r, 2048)
			if err != nil {
				return certificate{}, err
			}
			return caWithKey(cn, days, key, r, now)
		},
		"genCAWithKey": func(cn string, days int, keyPEM string) (certificate, error) {
			key, err := parseKeyPEM(keyPEM)
			if err != nil {
				return certificate{}, err
			}
			return caWithKey(cn, days, key, st.stream("genCAWithKey"), now)
		},
		"genSelfSignedCert": func(cn string, ips, dns []any, days int) (certificate, error) {
			r := st.stream("genSelfSignedCert")
			key, err := seededRSA(r, 2048)
			if err != nil {
				return certificate{}, err
			}
			return selfSigned(cn, ips, dns, days, key, r, now)
		},
		"genSelfSignedCertWithKey": func(cn string, ips, dns []any, days int, keyPEM string) (certificate, error) {
			key, err := parseKeyPEM(keyPEM)
			if err != nil {
				return certificate{}, err
			}
			return selfSigned(cn, ips, dns, days, key, st.stream("genSelfSignedCertWithKey"), now)
		},
		"genSignedCert": func(cn string, ips, dns []any, days int, ca certificate) (certificate, error) {
			r := st.stream("genSignedCert")
			key, err := seededRSA(r, 2048)
			if err != nil {
				return certificate{}, err
			}
			return signed(cn, ips, dns, days, ca, key, r, now)
		},
		"genSignedCertWithKey": func(cn string, ips, dns []any, days int, ca certificate, keyPEM string) (certificate, error) {
			key, err := parseKeyPEM(keyPEM)
			if err != nil {
				return certificate{}, err
			}
			return signed(cn, ips, dns, days, ca, key, st.stream("genSignedCertWithKey"), now)
		},
	}
}

// seedStream is a deterministic random stream.
type seedStream struct{ *rand.Rand }

func (s seedStream) read(p []byte) {
	for i := 0; i < len(p); i += 8 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], s.Uint64())
		copy(p[i:], b[:])
	}
}

// Read makes the stream an io.Reader.
func (s seedStream) Read(p []byte) (int, error) { s.read(p); return len(p), nil }

// stream returns the stream for the next seeded call of fn in the
// template being rendered.
func (st *renderState) stream(fn string) seedStream {
	st.calls++
	h := sha256.New()
	for _, part := range []string{st.seed, st.current, fmt.Sprint(st.calls), fn} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	var seed [32]byte
	copy(seed[:], h.Sum(nil))
	return seedStream{rand.New(rand.NewChaCha8(seed))}
}

func asTime(d any) (time.Time, bool) {
	switch d := d.(type) {
	case time.Time:
		return d, true
	case *time.Time:
		if d != nil {
			return *d, true
		}
	case int64:
		return time.Unix(d, 0), true
	case int:
		return time.Unix(int64(d), 0), true
	}
	return time.Time{}, false
}
