package parseserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/parse-mcp/parse-mcp/internal/config"
)

// Login is Parse's own password login (POST /login, without the master
// key), so that everything the app configured for logins applies: account
// lockout, email verification, auth adapters, beforeLogin
// triggers. It returns the new session's token; a refusal is Parse's *Error
// (code 101 for a wrong username or password). The password is sent only
// in the request body, never in a URL, a log line or an error.
func (c *Client) Login(ctx context.Context, username, password string) (config.Secret, error) {
	out, err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/login", Body: map[string]any{
		"username": username,
		"password": password,
	}}, Identity{})
	if err != nil {
		return config.Secret{}, err
	}
	token, _ := out["sessionToken"].(string)
	if token == "" {
		return config.Secret{}, errors.New("the login answer of Parse Server has no session token")
	}
	return config.NewSecret(token), nil
}

// Logout ends a session (POST /logout as that session): Parse deletes its
// _Session row, so every credential mapped to it stops working.
func (c *Client) Logout(ctx context.Context, sessionToken config.Secret) error {
	_, err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/logout", Body: map[string]any{}}, Identity{SessionToken: sessionToken})
	return err
}
