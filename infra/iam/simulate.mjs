// Evaluates IAM requests against policies with @cloud-copilot/iam-simulate
// (a maintained IAM policy simulator: identity and resource policies, every
// condition operator, action and resource-type validation).
//
// stdin: {"requests": [{"id", "principal", "action", "resource", "context",
//          "identityPolicies": [{name, policy}], "resourcePolicy"?}]}
// stdout: [{"id", "result": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//           "errors"?, "denyStatements"?}]
// infra/iam/check.py writes the requests and reads the results.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const { requests } = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const results = []
for (const request of requests) {
  const simulation = {
    identityPolicies: request.identityPolicies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: request.resourcePolicy,
    request: {
      action: request.action,
      principal: request.principal,
      resource: { resource: request.resource, accountId: request.accountId },
      contextVariables: request.context
    }
  }
  const outcome = await runSimulation(simulation, {})
  if (outcome.resultType === 'error') {
    results.push({ id: request.id, result: 'Error', errors: outcome.errors })
    continue
  }
  // One analysis for a resource ARN; one per matching resource for a
  // wildcard resource ("*": actions without resource-level permissions).
  const analyses = outcome.resultType === 'single' ? [outcome.result] : (outcome.results ?? [])
  const denies = analyses.flatMap((r) => r.analysis?.identityAnalysis?.denyStatements ?? []).map((s) => s.statement)
  results.push({ id: request.id, result: outcome.overallResult, resultType: outcome.resultType, denyStatements: denies })
}
process.stdout.write(JSON.stringify(results))
