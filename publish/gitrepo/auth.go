package gitrepo

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// TokenAuth authenticates over HTTPS with a token, as GitHub, GitLab and
// Gitea accept it. The token is never printed: go-git's BasicAuth
// redacts it in String().
func TokenAuth(token string) transport.AuthMethod {
	return &githttp.BasicAuth{Username: "x-access-token", Password: token}
}

// SSHAuth authenticates with a private key file; knownHosts is the
// known_hosts file to check the server against (empty: the user's).
func SSHAuth(keyFile, passphrase, knownHosts string) (transport.AuthMethod, error) {
	auth, err := gitssh.NewPublicKeysFromFile("git", keyFile, passphrase)
	if err != nil {
		return nil, fmt.Errorf("ssh key %s: %w", keyFile, err)
	}
	var files []string
	if knownHosts != "" {
		files = append(files, knownHosts)
	}
	cb, err := gitssh.NewKnownHostsCallback(files...)
	if err != nil {
		return nil, fmt.Errorf("known hosts: %w", err)
	}
	auth.HostKeyCallback = cb
	return auth, nil
}

// ReadToken returns a token from a file (trailing newline trimmed) or, if
// file is empty, from the environment variable env. It never logs it.
func ReadToken(file, env string) (string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	return os.Getenv(env), nil
}
