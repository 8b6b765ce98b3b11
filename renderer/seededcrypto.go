package renderer

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/blowfish"
)

// Keys, certificates and password hashes from a seeded stream: what Helm's
// genPrivateKey, genCA, genSignedCert, encryptAES and bcrypt make at random,
// made the same in every render of the same release.

// certificate is sprig's: templates read .Cert and .Key.
type certificate struct {
	Cert string
	Key  string
}

// seededRSA searches two primes of bits/2 bits in the stream, as RSA key
// generation does, and checks the key.
func seededRSA(r seedStream, bits int) (*rsa.PrivateKey, error) {
	e := big.NewInt(65537)
	one := big.NewInt(1)
	prime := func() *big.Int {
		buf := make([]byte, bits/16)
		for {
			r.read(buf)
			buf[0] |= 0xc0 // the top two bits: the product has exactly bits bits
			buf[len(buf)-1] |= 1
			start := new(big.Int).SetBytes(buf)
			// Step through odd numbers from start, skipping those a small
			// prime divides, and test the rest.
			res := make([]uint64, len(smallPrimes))
			m := new(big.Int)
			for i, sp := range smallPrimes {
				res[i] = m.Mod(start, big.NewInt(int64(sp))).Uint64()
			}
		next:
			for delta := uint64(0); delta < 1<<20; delta += 2 {
				for i, sp := range smallPrimes {
					if (res[i]+delta)%sp == 0 {
						continue next
					}
				}
				p := new(big.Int).Add(start, new(big.Int).SetUint64(delta))
				if p.BitLen() != bits/2 || !p.ProbablyPrime(20) {
					continue
				}
				if new(big.Int).GCD(nil, nil, e, new(big.Int).Sub(p, one)).Cmp(one) == 0 {
					return p
				}
			}
		}
	}
	for {
		p, q := prime(), prime()
		if p.Cmp(q) == 0 {
			continue
		}
		n := new(big.Int).Mul(p, q)
		phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
		d := new(big.Int).ModInverse(e, phi)
		if d == nil || n.BitLen() != bits {
			continue
		}
		key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: 65537}, D: d, Primes: []*big.Int{p, q}}
		key.Precompute()
		if err := key.Validate(); err != nil {
			return nil, fmt.Errorf("generating an RSA key: %v", err)
		}
		return key, nil
	}
}

// smallPrimes are the odd primes below 1000.
var smallPrimes = func() []uint64 {
	var ps []uint64
	for n := uint64(3); n < 1000; n += 2 {
		prime := true
		for _, p := range ps {
			if n%p == 0 {
				prime = false
				break
			}
		}
		if prime {
			ps = append(ps, n)
		}
	}
	return ps
}()

// seededKey is genPrivateKey's key of the given type.
func seededKey(typ string, r seedStream) (crypto.PrivateKey, error) {
	switch typ {
	case "", "rsa":
		return seededRSA(r, 4096) // sprig's size
	case "ecdsa":
		for {
			b := make([]byte, 32)
			r.read(b)
			if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b); err == nil {
				return k, nil
			}
		}
	case "ed25519":
		seed := make([]byte, ed25519.SeedSize)
		r.read(seed)
		return ed25519.NewKeyFromSeed(seed), nil
	case "dsa":
		return nil, errors.New("genPrivateKey: dsa keys are not generated from a seed (DSA is deprecated); use rsa, ecdsa or ed25519, or pass the key in from values")
	}
	return nil, fmt.Errorf("genPrivateKey: unknown key type %q", typ)
}

// pemBlockForKey encodes a key as sprig does.
func pemBlockForKey(key crypto.PrivateKey) *pem.Block {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case *ecdsa.PrivateKey:
		b, _ := x509.MarshalECPrivateKey(k)
		return &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	default:
		b, _ := x509.MarshalPKCS8PrivateKey(k)
		return &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
}

func parseKeyPEM(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("parsing private key: no PEM block found")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("parsing private key: a %q block is not a key that signs", block.Type)
}

// baseCert is sprig's certificate template, with the serial from the
// stream and the validity from Options.Now.
func baseCert(cn string, ips, dns []any, days int, r seedStream, now time.Time) (*x509.Certificate, error) {
	c := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now,
		NotAfter:              now.Add(time.Hour * 24 * time.Duration(days)),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{},
		DNSNames:              []string{},
	}
	serial := make([]byte, 16)
	r.read(serial)
	c.SerialNumber = new(big.Int).SetBytes(serial)
	for _, ip := range ips {
		s, ok := ip.(string)
		if !ok || net.ParseIP(s) == nil {
			return nil, fmt.Errorf("error parsing ip: %v", ip)
		}
		c.IPAddresses = append(c.IPAddresses, net.ParseIP(s))
	}
	for _, d := range dns {
		s, ok := d.(string)
		if !ok {
			return nil, fmt.Errorf("error processing alternate dns name: %v is not a string", d)
		}
		c.DNSNames = append(c.DNSNames, s)
	}
	return c, nil
}

func caWithKey(cn string, days int, key crypto.Signer, r seedStream, now time.Time) (certificate, error) {
	tmpl, err := baseCert(cn, nil, nil, days, r, now)
	if err != nil {
		return certificate{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign
	tmpl.IsCA = true
	return certAndKey(tmpl, key, tmpl, key)
}

func selfSigned(cn string, ips, dns []any, days int, key crypto.Signer, r seedStream, now time.Time) (certificate, error) {
	tmpl, err := baseCert(cn, ips, dns, days, r, now)
	if err != nil {
		return certificate{}, err
	}
	return certAndKey(tmpl, key, tmpl, key)
}

func signed(cn string, ips, dns []any, days int, ca certificate, key crypto.Signer, r seedStream, now time.Time) (certificate, error) {
	block, _ := pem.Decode([]byte(ca.Cert))
	if block == nil {
		return certificate{}, errors.New("unable to decode certificate")
	}
	parent, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return certificate{}, fmt.Errorf("error parsing certificate: %v", err)
	}
	signer, err := parseKeyPEM(ca.Key)
	if err != nil {
		return certificate{}, err
	}
	tmpl, err := baseCert(cn, ips, dns, days, r, now)
	if err != nil {
		return certificate{}, err
	}
	return certAndKey(tmpl, key, parent, signer)
}

// certAndKey signs the certificate. RSA (PKCS #1 v1.5) and Ed25519
// signatures need no randomness; ECDSA's are derived from the key and the
// message (RFC 6979) when no randomness is given.
func certAndKey(tmpl *x509.Certificate, key crypto.Signer, parent *x509.Certificate, signer crypto.Signer) (certificate, error) {
	der, err := x509.CreateCertificate(nil, tmpl, parent, key.Public(), signer)
	if err != nil {
		return certificate{}, fmt.Errorf("error creating certificate: %v", err)
	}
	return certificate{
		Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key:  string(pem.EncodeToMemory(pemBlockForKey(key))),
	}, nil
}

// encryptAESSeeded is sprig's encryptAES (AES-256-CBC, the key the
// password padded with zeros, PKCS #7 padding) with the IV from the stream.
func encryptAESSeeded(password, plaintext string, r seedStream) (string, error) {
	if plaintext == "" {
		return "", nil
	}
	key := make([]byte, 32)
	copy(key, password)
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	content := []byte(plaintext)
	pad := block.BlockSize() - len(content)%block.BlockSize()
	content = append(content, strings.Repeat(string(rune(pad)), pad)...)
	out := make([]byte, aes.BlockSize+len(content))
	r.read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], content)
	return base64.StdEncoding.EncodeToString(out), nil
}

// bcryptSeeded is bcrypt at sprig's cost (10) with the salt from the
// stream: the "$2a$" hash golang.org/x/crypto/bcrypt writes and checks.
func bcryptSeeded(password string, r seedStream) (string, error) {
	const cost = 10
	if len(password) > 72 {
		return "", errors.New("bcrypt: the password is longer than 72 bytes")
	}
	salt := make([]byte, 16)
	r.read(salt)
	csalt := bcryptBase64(salt) // 22 characters
	dsalt, err := bcryptDecode(csalt)
	if err != nil {
		return "", err
	}
	key := append([]byte(password), 0)
	c, err := blowfish.NewSaltedCipher(key, dsalt)
	if err != nil {
		return "", err
	}
	for i := 0; i < 1<<cost; i++ {
		blowfish.ExpandKey(key, c)
		blowfish.ExpandKey(dsalt, c)
	}
	data := []byte("OrpheanBeholderScryDoubt")
	for i := 0; i < 24; i += 8 {
		for j := 0; j < 64; j++ {
			c.Encrypt(data[i:i+8], data[i:i+8])
		}
	}
	return fmt.Sprintf("$2a$%02d$%s%s", cost, csalt, bcryptBase64(data[:23])), nil
}

var bcryptEncoding = base64.NewEncoding("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789").WithPadding(base64.NoPadding)

func bcryptBase64(b []byte) string { return bcryptEncoding.EncodeToString(b) }

func bcryptDecode(s string) ([]byte, error) { return bcryptEncoding.DecodeString(s) }
