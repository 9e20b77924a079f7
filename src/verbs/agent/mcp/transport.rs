//! stdin and stdout as the server's SDK reads and writes them, with one thing answered here: a message
//! whose `id` is neither a string nor a number (JSON-RPC allows only those). The SDK would read it as a
//! notification and leave the client waiting for ever, or, as the first message, stop with a dump of it;
//! here the client gets JSON-RPC's invalid-request error and the server goes on.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The reading and writing ends the SDK serves on; the tasks that join them to stdin and stdout run on
/// the current runtime until stdin closes and the SDK lets go of its writer.
pub fn stdio() -> (DuplexStream, DuplexStream) {
    const BUFFER: usize = 1 << 16;
    let (server_reads, mut from_stdin) = tokio::io::duplex(BUFFER);
    let (server_writes, to_stdout) = tokio::io::duplex(BUFFER);
    let (refusals, mut refused) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(refusal) = refusal(&line) {
                let _ = refusals.send(refusal);
            } else if from_stdin
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        // dropping `from_stdin` is the end of input the SDK stops on
    });
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut written = BufReader::new(to_stdout).lines();
        loop {
            let line = tokio::select! {
                line = written.next_line() => match line {
                    Ok(Some(line)) => line,
                    _ => break,
                },
                Some(line) = refused.recv() => line,
            };
            if stdout
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    });
    (server_reads, server_writes)
}

/// The error a message with an id JSON-RPC does not allow gets, as a line; `None` for any other line.
fn refusal(line: &str) -> Option<String> {
    let message: Value = serde_json::from_str(line).ok()?;
    let id = message.as_object()?.get("id")?;
    if matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return None;
    }
    let error = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32600,
            "message": format!("Invalid Request: an id is a string or a number, not {id}"),
        },
    });
    Some(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_id_json_rpc_does_not_allow_is_refused() {
        for allowed in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "not json",
            "[1]",
        ] {
            assert_eq!(refusal(allowed), None, "{allowed}");
        }
        let refused = refusal(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}"#).unwrap();
        let refused: Value = serde_json::from_str(&refused).unwrap();
        assert_eq!(refused["error"]["code"], -32600);
        assert_eq!(refused["id"], Value::Null);
    }
}
