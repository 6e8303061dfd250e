"""An app using Authlib (Debian's python3-authlib) against the service's OpenID provider, with the
library's defaults: the requests OAuth2Session with PKCE S256, the ID token verified with the JWKS
(authlib.jose) and its claims checked by authlib.oidc.core.CodeIDToken, userinfo, refresh, revocation.

Driven by test/interop/authlib.test.ts over stdin/stdout, one JSON object a line: it prints the URL to
authorize at, reads back the URL the browser ended at, prints what it got, the logout URL, and ends."""
import json
import sys

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken


def say(message):
    print(json.dumps(message), flush=True)


def main():
    issuer, client_id, client_secret, redirect_uri, post_logout = sys.argv[1:6]
    metadata = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    session = OAuth2Session(client_id, client_secret, scope="openid email profile offline_access",
                            redirect_uri=redirect_uri, code_challenge_method="S256")
    verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = session.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier,
                                                  nonce=nonce, prompt="consent")
    say({"authorize": url})

    callback = sys.stdin.readline().strip()
    token = session.fetch_token(metadata["token_endpoint"], authorization_response=callback, state=state,
                                code_verifier=verifier)
    jwks = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    claims = jwt.decode(token["id_token"], jwks, claims_cls=CodeIDToken,
                        claims_options={"iss": {"essential": True, "value": metadata["issuer"]}},
                        claims_params={"nonce": nonce, "client_id": client_id})
    claims.validate()

    userinfo = session.get(metadata["userinfo_endpoint"]).json()
    refreshed = session.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    userinfo_after_refresh = session.get(metadata["userinfo_endpoint"]).json()
    revoked = session.revoke_token(metadata["revocation_endpoint"], token=refreshed["access_token"],
                                   token_type_hint="access_token")
    logout = requests.Request("GET", metadata["end_session_endpoint"], params={
        "id_token_hint": token["id_token"], "post_logout_redirect_uri": post_logout, "state": "authlib"}).prepare().url
    say({
        "id_token": dict(claims),
        "id_token_alg": jwt.decode(token["id_token"], jwks).header["alg"],
        "userinfo": userinfo,
        "refreshed": "access_token" in refreshed,
        "userinfo_after_refresh": userinfo_after_refresh,
        "revocation_status": revoked.status_code,
        "logout": logout,
    })


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the test reads the failure from the last line
        say({"error": f"{type(error).__name__}: {error}"})
        sys.exit(1)
