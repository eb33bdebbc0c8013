//! `serve: {mcp: …}` and a `user:` agent's MCP fields: a good section
//! loads; a resource or prompt message without exactly one content, a
//! repeated URI, a placeholder naming no argument, a template without
//! variables, a tool schema that is no object, a form that is no object
//! schema or beside `answered_by: client_model` are located errors.

use troupe_config::{Config, McpToolResult, UserAnswerer};

const BASE: &str = "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
";

#[test]
fn a_good_mcp_section_loads() {
    let good = format!(
        "{BASE}  asker:
    user: {{answered_by: client_model, max_tokens: 50}}
workflow: {{steps: [{{agent: a}}, {{agent: asker}}]}}
serve:
  mcp:
    tool: {{input_schema: {{type: object, properties: {{}}}}, result: content}}
    resources:
      - {{uri: 'notes://a', text: A}}
      - {{uri: 'notes://b', file: b.txt}}
    resource_templates:
      - {{uri_template: 'notes://{{id}}/t', text: 'Note {{id}}', complete: {{id: ['1']}}}}
    prompts:
      - name: review
        arguments: [{{name: text, required: true}}]
        messages:
          - text: 'Review {{text}} as JSON: {{\"k\": 1}}'
          - image: {{data: AAAA, mime_type: image/png}}
"
    );
    let config = Config::parse(&good, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mcp = config.spec().serve.as_ref().unwrap().mcp.as_ref().unwrap();
    assert_eq!(
        mcp.tool.as_ref().unwrap().result,
        Some(McpToolResult::Content)
    );
    assert_eq!(mcp.resources.len(), 2);
    let asker = config.spec().agents["asker"].user.as_ref().unwrap();
    assert_eq!(asker.answered_by, Some(UserAnswerer::ClientModel));
}

#[test]
fn bad_mcp_sections_are_located() {
    for (rest, head, says) in [
        (
            "serve:\n  mcp:\n    resources:\n      - {uri: 'x://a', text: A, blob: QQ==}\n",
            "t.yaml:9:9: field `serve.mcp.resources[0]`: ",
            "needs exactly one content",
        ),
        (
            "serve:\n  mcp:\n    resources:\n      - {uri: 'x://a', text: A}\n      - {uri: 'x://a', text: B}\n",
            "t.yaml:10:15: field `serve.mcp.resources[1].uri`: ",
            "declared twice",
        ),
        (
            "serve:\n  mcp:\n    prompts:\n      - name: p\n        messages: [{text: 'Hi {who}'}]\n",
            "t.yaml:10:27: field `serve.mcp.prompts[0].messages[0].text`: ",
            "`{who}` names no argument of `p`",
        ),
        (
            "serve:\n  mcp:\n    prompts:\n      - name: p\n        messages: [{text: a, image: {data: AA, mime_type: image/png}}]\n",
            "t.yaml:10:20: field `serve.mcp.prompts[0].messages[0]`: ",
            "exactly one content",
        ),
        (
            "serve:\n  mcp:\n    resource_templates:\n      - {uri_template: 'x://fixed', text: a}\n",
            "t.yaml:9:24: field `serve.mcp.resource_templates[0].uri_template`: ",
            "not a URI template with variables",
        ),
        (
            "serve:\n  mcp:\n    tool: {input_schema: {type: string}}\n",
            "t.yaml:8:26: field `serve.mcp.tool.input_schema`: ",
            "JSON Schema of an object",
        ),
        (
            "  u:\n    user: {form: {type: object}}\nworkflow: {steps: [{agent: a}, {agent: u}]}\n",
            "t.yaml:7:18: field `agents.u.user.form`: ",
            "at least one property",
        ),
        (
            "  u:\n    user: {answered_by: client_roots, form: {properties: {x: {type: string}}}}\nworkflow: {steps: [{agent: a}, {agent: u}]}\n",
            "t.yaml:7:39: field `agents.u.user.form`: ",
            "goes with `answered_by: person`",
        ),
    ] {
        let text = Config::parse(&format!("{BASE}{rest}"), "t.yaml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("loaded: {rest}"));
        assert!(
            text.lines()
                .any(|l| l.starts_with(head) && l.contains(says)),
            "expected `{head}` … `{says}`, got:\n{text}"
        );
    }
}
