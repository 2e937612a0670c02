// The infrastructure generators' public entry (tests and scripts import this, not the files).
export {
  buildDefinitions,
  communityDefinitions,
  communityModel,
  devGuestDefinitions,
  devPassword,
  rabbitPasswordHash,
  type Definitions,
  type DefinitionsOptions,
} from './definitions';
export {
  APPS,
  appManifests,
  dataStorePolicies,
  messageAgeQuery,
  PRE_STOP_SLEEP_SECONDS,
  SHUTDOWN_TIMEOUT_MS,
  TERMINATION_GRACE_SECONDS,
  type AppSpec,
} from './k8s';
export { generatedFiles, userSecretName } from './generate';
export { operatorResources, RABBITMQ_CLUSTER } from './operator';
export { monitoringResources, ruleFiles } from './monitoring';
