//! OAuth for a streamable-HTTP server ([`McpOAuth`]), through rmcp's
//! authorization manager: the server's 401 challenge, protected-resource
//! and authorization-server metadata discovery, client registration
//! (pre-registered, a client ID metadata document, or dynamic), PKCE, the
//! code exchange, and the token on every request (refreshed when the server
//! rejects it).
//!
//! The one step a person takes — opening the authorization URL and being
//! sent back to the redirect URI — is [`McpOAuth::authorize`]: given the
//! URL, it gives back the URL the authorization server redirected to.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationCallback, AuthorizationRequest, OAuthState};
use rmcp::transport::{AuthClient, AuthorizationManager};

/// What [`McpOAuth::authorize`] returns: the redirect URL (with `code`
/// and `state`), or why there is none.
pub type Authorized = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// Takes the authorization URL to a redirect URL carrying the code.
pub type Authorize = Arc<dyn Fn(String) -> Authorized + Send + Sync>;

/// How troupe authorizes with an OAuth-protected streamable-HTTP server.
#[derive(Clone)]
pub struct McpOAuth {
    /// Where the authorization server sends the user back (registered
    /// with it).
    pub redirect_uri: String,
    /// The client's name in a dynamic registration.
    pub client_name: String,
    /// A pre-registered client id (no registration then).
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it has one.
    pub client_secret: Option<String>,
    /// An HTTPS URL of a client ID metadata document, used as the client
    /// id where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for (chosen from the server's challenge and metadata
    /// when empty).
    pub scopes: Vec<String>,
    /// Opens the authorization URL and gives back the redirect URL.
    pub authorize: Authorize,
}

impl fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret is a credential: whether there is one only.
        f.debug_struct("McpOAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl McpOAuth {
    /// OAuth with a redirect URI and what takes the authorization URL to
    /// the redirect (a browser and a local listener, or a headless fetch).
    pub fn new(
        redirect_uri: impl Into<String>,
        authorize: impl Fn(String) -> Authorized + Send + Sync + 'static,
    ) -> Self {
        McpOAuth {
            redirect_uri: redirect_uri.into(),
            client_name: "troupe".into(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            authorize: Arc::new(authorize),
        }
    }

    /// Uses a pre-registered client (and its secret, if any).
    pub fn client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// Offers a client ID metadata document's URL as the client id.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Asks for these scopes.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Runs the authorization-code flow against the server at `url`,
    /// starting from its 401 `challenge` (`WWW-Authenticate`), and gives
    /// back the authorized manager.
    pub(super) async fn run(
        &self,
        url: &str,
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, String> {
        if let Some(secret) = &self.client_secret {
            troupe_runtime::secrets::register(secret);
        }
        let mut state = OAuthState::new(url, None)
            .await
            .map_err(|e| format!("cannot start OAuth: {e}"))?;
        let mut request = AuthorizationRequest::new(&self.redirect_uri)
            .with_client_name(&self.client_name)
            .with_initial_scope_selection();
        if !self.scopes.is_empty() {
            request = request.with_scopes(self.scopes.iter().cloned());
        }
        if let Some(id) = &self.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &self.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(doc) = &self.client_metadata_url {
            request = request.with_client_metadata_url(doc);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        state
            .start_authorization(request)
            .await
            .map_err(|e| format!("OAuth authorization could not start: {e}"))?;
        let auth_url = state
            .get_authorization_url()
            .await
            .map_err(|e| format!("no authorization URL: {e}"))?;
        let redirect = (self.authorize)(auth_url).await?;
        state
            .handle_callback_url(&redirect)
            .await
            .map_err(|e| format!("the authorization code was not accepted: {e}"))?;
        let manager = state
            .into_authorization_manager()
            .ok_or_else(|| "OAuth ended unauthorized".to_string())?;
        mask_token(&manager).await;
        Ok(manager)
    }
}

/// Why a server refused a request for want of authorization.
pub(super) enum Challenge {
    /// 401: the token is gone or no longer taken (e.g. the server moved to
    /// another authorization server); its `WWW-Authenticate` header.
    Unauthorized(String),
    /// 403 `insufficient_scope`: the scope the request needs, if named.
    InsufficientScope(Option<String>),
}

impl Challenge {
    /// The challenge behind a failed request, if that is why it failed.
    pub(super) fn of(error: &(dyn std::error::Error + 'static)) -> Option<Challenge> {
        use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
        let mut source = Some(error);
        while let Some(current) = source {
            if let Some(e) = current.downcast_ref::<AuthRequiredError>() {
                return Some(Challenge::Unauthorized(e.www_authenticate_header.clone()));
            }
            if let Some(e) = current.downcast_ref::<InsufficientScopeError>() {
                return Some(Challenge::InsufficientScope(e.required_scope.clone()));
            }
            source = current.source();
        }
        None
    }
}

impl McpOAuth {
    /// Authorizes again for a live connection whose request met
    /// `challenge`: the wider scope (the granted ones kept) for a 403, the
    /// whole flow from the new challenge for a 401. The connection's
    /// client takes the new token for its next request.
    pub(super) async fn reauthorize(
        &self,
        url: &str,
        client: &AuthClient<reqwest::Client>,
        challenge: Challenge,
    ) -> Result<(), String> {
        match challenge {
            Challenge::InsufficientScope(scope) => {
                let scope = scope.ok_or("the server named no scope to ask for")?;
                let manager = client.auth_manager.lock().await;
                let auth_url = manager
                    .request_scope_upgrade(&scope)
                    .await
                    .map_err(|e| format!("cannot ask for scope '{scope}': {e}"))?;
                let redirect = (self.authorize)(auth_url).await?;
                let callback = AuthorizationCallback::from_redirect_url(&redirect)
                    .map_err(|e| format!("the redirect carries no code: {e}"))?;
                manager
                    .exchange_code_for_token_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    )
                    .await
                    .map_err(|e| format!("the authorization code was not accepted: {e}"))?;
                mask_token(&manager).await;
                Ok(())
            }
            Challenge::Unauthorized(header) => {
                let fresh = self.run(url, Some(&header)).await?;
                *client.auth_manager.lock().await = fresh;
                Ok(())
            }
        }
    }
}

/// Registers the manager's access token as a secret, so that no log or
/// error shows it.
async fn mask_token(manager: &AuthorizationManager) {
    if let Ok(token) = manager.get_access_token().await {
        troupe_runtime::secrets::register(&token);
    }
}
