// An app using go-oidc and golang.org/x/oauth2 (Debian's golang-github-coreos-go-oidc-dev) against the
// service's OpenID provider, with the libraries' defaults: discovery, the code flow (PKCE S256 added as
// x/oauth2 0.3 takes it, by parameters), the ID token verified by provider.Verifier (RS256, its default),
// userinfo, refresh.
//
// Driven by test/interop/go-oidc.test.ts over stdin/stdout, one JSON object a line: it prints the URL to
// authorize at, reads back the URL the browser ended at, prints what it got and the logout URL, and ends.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	oidc "github.com/coreos/go-oidc"
	"golang.org/x/oauth2"
)

func say(message map[string]interface{}) {
	line, _ := json.Marshal(message)
	fmt.Println(string(line))
}

func fail(err error) {
	say(map[string]interface{}{"error": err.Error()})
	os.Exit(1)
}

func random() string {
	bytes := make([]byte, 32)
	if _, err := rand.Read(bytes); err != nil {
		fail(err)
	}
	return base64.RawURLEncoding.EncodeToString(bytes)
}

func main() {
	issuer, clientID, clientSecret, redirectURI, postLogout := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		fail(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: clientID})
	config := oauth2.Config{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		Endpoint:     provider.Endpoint(),
		RedirectURL:  redirectURI,
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess},
	}

	state, nonce, codeVerifier := random(), random(), random()
	challenge := sha256.Sum256([]byte(codeVerifier))
	say(map[string]interface{}{"authorize": config.AuthCodeURL(state, oidc.Nonce(nonce),
		oauth2.SetAuthURLParam("prompt", "consent"),
		oauth2.SetAuthURLParam("code_challenge", base64.RawURLEncoding.EncodeToString(challenge[:])),
		oauth2.SetAuthURLParam("code_challenge_method", "S256"))})

	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		fail(err)
	}
	callback, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		fail(err)
	}
	if callback.Query().Get("state") != state {
		fail(fmt.Errorf("state mismatch: %s", callback.String()))
	}
	token, err := config.Exchange(ctx, callback.Query().Get("code"), oauth2.SetAuthURLParam("code_verifier", codeVerifier))
	if err != nil {
		fail(err)
	}
	rawIDToken, ok := token.Extra("id_token").(string)
	if !ok {
		fail(fmt.Errorf("no id_token in the token response"))
	}
	idToken, err := verifier.Verify(ctx, rawIDToken)
	if err != nil {
		fail(err)
	}
	if idToken.Nonce != nonce {
		fail(fmt.Errorf("nonce mismatch"))
	}
	var idClaims map[string]interface{}
	if err := idToken.Claims(&idClaims); err != nil {
		fail(err)
	}

	userInfo, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(token))
	if err != nil {
		fail(err)
	}
	var userInfoClaims map[string]interface{}
	if err := userInfo.Claims(&userInfoClaims); err != nil {
		fail(err)
	}

	expired := &oauth2.Token{RefreshToken: token.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
	refreshed, err := config.TokenSource(ctx, expired).Token()
	if err != nil {
		fail(err)
	}
	refreshedInfo, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(refreshed))
	if err != nil {
		fail(err)
	}

	var endpoints struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := provider.Claims(&endpoints); err != nil {
		fail(err)
	}
	logout, _ := url.Parse(endpoints.EndSession)
	query := logout.Query()
	query.Set("id_token_hint", rawIDToken)
	query.Set("post_logout_redirect_uri", postLogout)
	query.Set("state", "go-oidc")
	logout.RawQuery = query.Encode()

	say(map[string]interface{}{
		"id_token":               idClaims,
		"userinfo":               userInfoClaims,
		"refreshed":              refreshed.AccessToken != "" && refreshed.AccessToken != token.AccessToken,
		"userinfo_after_refresh": map[string]interface{}{"sub": refreshedInfo.Subject},
		"logout":                 logout.String(),
	})
}
