//! Serving a fake on a free loopback port for as long as the test holds it.

use axum::Router;

/// A server running in the test's runtime; dropping it stops the server.
pub struct LocalServer {
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl LocalServer {
    pub async fn start(app: Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let base_url = format!("http://{}", listener.local_addr().expect("local address"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the fake serves");
        });
        Self { base_url, task }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
